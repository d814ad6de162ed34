import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { CurrentPrincipal, OperatorOrScope } from '../auth/auth.decorators';
import type { Principal } from '../auth/auth.decorators';
import { CallbackAuth, CallbackTask } from './callback-auth.guard';
import { TaskCallbacksService } from './task-callbacks.service';
import { taskView } from './task-view';
import { ListTasksQueryDto, TaskCallbackDto, TaskProgressDto, TaskTemplateDto } from './tasks.dto';
import { Task } from './tasks.entity';
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
  @ApiOperation({ summary: 'Store a task (answered pending); the dispatch loop sends it to an online dispatcher as soon as one fits' })
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

  @Post(':guid/callback')
  @ApiOperation({ summary: 'Final report from the dispatcher: Bearer callback token, X-Service-Signature over the raw body' })
  @CallbackAuth('required')
  @HttpCode(200)
  callback(@CallbackTask() task: Task, @Body() body: TaskCallbackDto) {
    return this.callbacks.callback(task, body);
  }

  @Post(':guid/progress')
  @ApiOperation({ summary: 'Progress forwarded by the dispatcher: Bearer callback token' })
  @CallbackAuth('when-sent')
  @HttpCode(200)
  progress(@CallbackTask() task: Task, @Body() body: TaskProgressDto) {
    return this.callbacks.progress(task, body);
  }
}
