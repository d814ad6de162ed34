import { Injectable } from '@nestjs/common';
import { validateBody } from '../../shared/errors/validation';
import { HotRequest, HotRoute } from '../../shared/http/hot-routes';
import { CallbackAuthenticator, SignaturePolicy } from './callback-authenticator';
import { CallbackAnswer, TaskCallbacksService } from './task-callbacks.service';
import { TaskCallbackDto, TaskProgressDto } from './tasks.dto';

/**
 * The task callback and progress endpoints on the hot lane (see `mountHotRoutes`): the same
 * authentication, then the same validation, then the same service as `TasksController`.
 */
@Injectable()
export class TaskHotRoutes {
  constructor(
    private readonly authenticator: CallbackAuthenticator,
    private readonly callbacks: TaskCallbacksService,
  ) {}

  routes(): HotRoute[] {
    return [
      this.route<TaskCallbackDto>('callback', 'required', TaskCallbackDto, (caller, body) => this.callbacks.callback(caller, body)),
      this.route<TaskProgressDto>('progress', 'when-sent', TaskProgressDto, (caller, body) => this.callbacks.progress(caller, body)),
    ];
  }

  private route<T extends object>(
    name: 'callback' | 'progress',
    policy: SignaturePolicy,
    dto: new () => T,
    run: (caller: Awaited<ReturnType<CallbackAuthenticator['authenticate']>>, body: T) => Promise<CallbackAnswer>,
  ): HotRoute {
    return {
      path: `/api/v1/tasks/:guid/${name}`,
      handle: async (request: HotRequest) => {
        const caller = await this.authenticator.authenticate({ guid: request.params.guid ?? '', headers: request.headers, rawBody: request.rawBody }, policy);
        const body = await validateBody(dto, request.body);
        return { status: 200, body: await run(caller, body) };
      },
    };
  }
}
