import { Inject, Injectable } from '@nestjs/common';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { validateBody } from '../../shared/errors/validation';
import { HotRequest, HotRoute } from '../../shared/http/hot-routes';
import { apiKeyCaller } from '../auth/api-key.strategy';
import { CreateTaskDto } from './tasks.dto';
import { TasksService } from './tasks.service';

/**
 * The task intake (`POST /tasks`, the controller's one request per dispatched task) on the hot
 * lane (see `serveHotRoutesFirst`). The same steps in the same order as `TasksController.create`
 * behind `ApiKeyAuth`: the body parsed, `X-API-Key` checked (401), the DTO validated (400),
 * then the same service call, 201 for a new task and 200 for the same one again.
 * test/e2e/dispatcher-task-hot-lane-differential.e2e-spec.ts sends both the same requests.
 */
@Injectable()
export class DispatcherTaskHotRoutes {
  constructor(
    private readonly tasks: TasksService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  routes(): HotRoute[] {
    return [{
      path: '/tasks',
      handle: async (request: HotRequest) => {
        const key = request.headers['x-api-key'];
        apiKeyCaller(Array.isArray(key) ? key.join(', ') : key, this.config.apiKey);
        const dto = await validateBody(CreateTaskDto, request.body);
        const { created, task } = await this.tasks.create(dto);
        return { status: created ? 201 : 200, body: { ok: true, data: task } };
      },
    }];
  }
}
