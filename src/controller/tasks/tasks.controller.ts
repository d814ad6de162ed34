import { Body, Controller, Get, Headers, HttpCode, Inject, Param, Post, Query, Req } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import type { RawBodyRequest } from '../../shared/http/configure-app';
import { CurrentPrincipal, OperatorOrScope } from '../auth/auth.decorators';
import type { Principal } from '../auth/auth.decorators';
import { TaskCallbacksService } from './task-callbacks.service';
import { taskView } from './task-view';
import { ListTasksQueryDto, TaskCallbackDto, TaskProgressDto, TaskTemplateDto } from './tasks.dto';
import { TasksService } from './tasks.service';

const DEFAULT_LIMIT = 50;

@ApiTags('tasks')
@Controller('api/v1/tasks')
export class TasksController {
  constructor(
    private readonly tasks: TasksService,
    private readonly callbacks: TaskCallbacksService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Post()
  @ApiOperation({ summary: 'Create a task and dispatch it to an online dispatcher (it stays pending while none fits)' })
  @OperatorOrScope('tasks:write')
  async create(@Body() dto: TaskTemplateDto, @CurrentPrincipal() principal: Principal) {
    return taskView(await this.tasks.createTask(dto, { createdBy: `${principal.kind}:${principal.name}` }));
  }

  @Get()
  @ApiOperation({ summary: 'List tasks, newest first: {count, next, previous, results}' })
  @OperatorOrScope('tasks:read')
  async list(@Query() query: ListTasksQueryDto) {
    const limit = query.limit ?? DEFAULT_LIMIT;
    const offset = query.offset ?? 0;
    const { count, results } = await this.tasks.list({ limit, offset, status: query.status, workflow: query.workflow });
    const page = (at: number) => {
      const params = new URLSearchParams({ limit: String(limit), offset: String(at) });
      if (query.status) params.set('status', query.status);
      if (query.workflow) params.set('workflow', query.workflow);
      return `${this.config.publicUrl}/api/v1/tasks/?${params.toString()}`;
    };
    return {
      count,
      next: offset + limit < count ? page(offset + limit) : null,
      previous: offset > 0 ? page(Math.max(offset - limit, 0)) : null,
      results: results.map(taskView),
    };
  }

  @Get(':guid')
  @ApiOperation({ summary: 'A task with its progress and result' })
  @OperatorOrScope('tasks:read')
  async detail(@Param('guid') guid: string) {
    return taskView(await this.tasks.get(guid));
  }

  @Post(':guid/cancel')
  @ApiOperation({ summary: 'Cancel a task on its dispatcher; 409 when it is already final' })
  @HttpCode(200)
  @OperatorOrScope('tasks:write')
  async cancel(@Param('guid') guid: string) {
    return taskView(await this.tasks.cancel(guid));
  }

  /** Authenticated by the task's callback token and signature, checked on the raw body. */
  @Post(':guid/callback')
  @ApiOperation({ summary: 'Final report from the dispatcher: Bearer callback token, X-Service-Signature over the raw body' })
  @ApiBody({ type: TaskCallbackDto })
  @ApiBearerAuth('callback_token')
  @HttpCode(200)
  callback(
    @Param('guid') guid: string,
    @Headers('authorization') authorization: string | undefined,
    @Headers('x-service-signature') signature: string | undefined,
    @Req() request: RawBodyRequest,
  ) {
    return this.callbacks.callback({ guid, authorization, signature, rawBody: request.rawBody, body: request.body });
  }

  @Post(':guid/progress')
  @ApiOperation({ summary: 'Progress forwarded by the dispatcher: Bearer callback token' })
  @ApiBody({ type: TaskProgressDto })
  @ApiBearerAuth('callback_token')
  @HttpCode(200)
  progress(
    @Param('guid') guid: string,
    @Headers('authorization') authorization: string | undefined,
    @Headers('x-service-signature') signature: string | undefined,
    @Req() request: RawBodyRequest,
  ) {
    return this.callbacks.progress({ guid, authorization, signature, rawBody: request.rawBody, body: request.body });
  }
}
