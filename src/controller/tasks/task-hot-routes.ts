import { Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { validateBody } from '../../shared/errors/validation';
import { HotRequest, HotRoute } from '../../shared/http/hot-routes';
import { AuditedRequest, AuditTrail } from '../audit/audit-trail';
import { authRequirementOf, OperatorOrClientGuard } from '../auth/auth.guard';
import { CallbackAuthenticator, SignaturePolicy } from './callback-authenticator';
import { CallbackAnswer, TaskCallbacksService } from './task-callbacks.service';
import { taskView } from './task-view';
import { TasksController } from './tasks.controller';
import { TaskCallbackDto, TaskProgressDto, TaskTemplateDto } from './tasks.dto';
import { TasksService } from './tasks.service';

/**
 * Task creation, the task callback and progress on the hot lane (see `serveHotRoutesFirst`):
 * the same steps in the same order as `TasksController`'s routes. Creation: the caller
 * authenticated and authorised as `OperatorOrClientGuard` does it (from the route's own
 * `@OperatorOrScope`), the body validated, the same service call, 201; its audit row written
 * as the audit interceptor writes it, for a success and for a refusal of a known caller alike.
 * test/e2e/hot-lane-differential.e2e-spec.ts sends both lanes the same requests.
 */
@Injectable()
export class TaskHotRoutes {
  constructor(
    private readonly authenticator: CallbackAuthenticator,
    private readonly callbacks: TaskCallbacksService,
    private readonly tasks: TasksService,
    private readonly guard: OperatorOrClientGuard,
    private readonly audit: AuditTrail,
    private readonly reflector: Reflector,
  ) {}

  routes(): HotRoute[] {
    return [
      this.creation(),
      this.callbackRoute<TaskCallbackDto>('callback', 'required', TaskCallbackDto, (caller, body) => this.callbacks.callback(caller, body)),
      this.callbackRoute<TaskProgressDto>('progress', 'when-sent', TaskProgressDto, (caller, body) => this.callbacks.progress(caller, body)),
    ];
  }

  /** `POST /api/v1/tasks/`, as `TasksController.create`. */
  private creation(): HotRoute {
    const handler = TasksController.prototype.create;
    const requirement = authRequirementOf(this.reflector, TasksController, handler)!;
    const plan = this.audit.planOf('POST', TasksController, handler);
    return {
      path: '/api/v1/tasks',
      handle: async (request: HotRequest) => {
        const audited: AuditedRequest = { method: 'POST', params: {}, body: request.body, ip: request.address };
        const credentials = { headers: request.headers, body: request.body, query: request.query, ip: request.address };
        const principal = await this.guard.principalOf(credentials, requirement, (user, refusal) => plan && this.audit.threw(plan, audited, refusal, user));
        audited.principal = principal;
        try {
          const dto = await validateBody(TaskTemplateDto, request.body);
          const view = taskView(await this.tasks.createTask(dto, { createdBy: `${principal.kind}:${principal.name}` }));
          if (plan) this.audit.succeeded(plan, audited, 201, view);
          return { status: 201, body: view };
        } catch (error) {
          if (plan) this.audit.threw(plan, audited, error);
          throw error;
        }
      },
    };
  }

  private callbackRoute<T extends object>(
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
