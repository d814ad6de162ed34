import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query, Res } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { abortOnClose, LOG_FOLLOW_KEEP_ALIVE, streamText } from '../../shared/http/stream-text';
import { StreamSlots } from '../../shared/http/stream-slots';
import { StreamLeases } from '../streams/stream-leases';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { CurrentPrincipal, OperatorOrScope } from '../auth/auth.decorators';
import type { Principal } from '../auth/auth.decorators';
import { Answers, AnswersWith, Refuses } from '../../shared/http/openapi-decorators';
import { CallbackAuth, CallbackCaller, CallbackSender } from './callback-auth.guard';
import { TaskCallbacksService } from './task-callbacks.service';
import { CursorPage, keysetRequest, toCursorPage } from '../../shared/http/page';
import { taskView, TaskView } from './task-view';
import { TaskLogsService } from './task-logs.service';
import { ListTasksQueryDto, TaskCallbackDto, TaskLogsQueryDto, TaskProgressDto, TaskTemplateDto } from './tasks.dto';
import { TasksService } from './tasks.service';
import { TaskAttemptsService } from '../scheduling/task-attempts.service';
import { AuditResource } from '../audit/audit.decorators';

@ApiTags('tasks')
@AuditResource('task', { param: 'guid', answer: 'guid' })
@Controller('api/v1/tasks')
export class TasksController {
  constructor(
    private readonly tasks: TasksService,
    private readonly callbacks: TaskCallbacksService,
    private readonly logs: TaskLogsService,
    private readonly attempts: TaskAttemptsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly slots: StreamSlots,
    private readonly leases: StreamLeases,
  ) {}

  @Post()
  @ApiOperation({ summary: 'Store a task (answered pending); the dispatch loop sends it to an online dispatcher as soon as one fits' })
  @OperatorOrScope('tasks:write')
  @Answers(201, 'Task', 'The task, stored as pending')
  async create(@Body() dto: TaskTemplateDto, @CurrentPrincipal() principal: Principal) {
    return taskView(await this.tasks.createTask(dto, { createdBy: `${principal.kind}:${principal.name}` }));
  }

  @Get()
  @ApiOperation({
    summary: 'List tasks, newest first: {count, count_estimated, next, previous, results}; next and previous carry a cursor; '
      + '?dead_letter=true lists the dead letters',
  })
  @OperatorOrScope('tasks:read')
  @Answers(200, 'TaskPage', 'A page of tasks')
  async list(@Query() query: ListTasksQueryDto): Promise<CursorPage<TaskView>> {
    const request = keysetRequest(query);
    const page = await this.tasks.list({ ...request, status: query.status, workflow: query.workflow, deadLetter: query.dead_letter });
    return toCursorPage(page, await this.attempts.views(page.items), request, {
      baseUrl: this.config.publicUrl,
      path: '/api/v1/tasks/',
      query: { status: query.status, workflow: query.workflow, dead_letter: query.dead_letter ? 'true' : undefined },
    });
  }

  @Get(':guid')
  @ApiOperation({ summary: 'A task with its progress, result, attempts and re-runs' })
  @OperatorOrScope('tasks:read')
  @Answers(200, 'Task', 'The task')
  @Refuses({ 404: 'not_found: no such task' })
  detail(@Param('guid') guid: string) {
    return this.attempts.detail(guid);
  }

  @Get(':guid/brief')
  @ApiOperation({ summary: 'The task\'s brief as its agent reads it (the inline brief as JSON, or the object at brief_key)' })
  @Answers(200, {}, 'The brief, in the content type it was stored with (JSON for an inline brief)')
  @Refuses({ 404: 'not_found: no such task, or its brief is not stored' })
  @OperatorOrScope('tasks:read')
  async brief(@Param('guid') guid: string, @Res() response: Response): Promise<void> {
    const brief = await this.tasks.brief(guid);
    response.type(brief.contentType).send(brief.body);
  }

  @Get(':guid/logs')
  @ApiOperation({
    summary: 'The agent output as text/plain (?tail=N): from the dispatcher while the task runs, from object storage once final; '
      + '?follow=true streams it (chunked text/plain) until the task is final, then ends',
  })
  @AnswersWith(200, 'text/plain', "The task's output; with ?follow=true streamed (chunked) until the task is final")
  @Refuses({ 404: 'not_found: no such task', 429: 'throttled: a follow beyond STREAMS_PER_PRINCIPAL or STREAMS_PER_REPLICA' })
  @OperatorOrScope('tasks:read')
  async taskLogs(@Param('guid') guid: string, @Query() query: TaskLogsQueryDto, @CurrentPrincipal() principal: Principal, @Res() response: Response): Promise<void> {
    if (query.follow) {
      this.slots.take(response);
      await this.leases.take(`${principal.kind}:${principal.id}`, response);
      return streamText(response, await this.logs.follow(guid, query.tail, abortOnClose(response)), undefined, LOG_FOLLOW_KEEP_ALIVE);
    }
    response.type('text/plain; charset=utf-8').send(await this.logs.read(guid, query.tail));
  }

  @Post(':guid/cancel')
  @ApiOperation({ summary: 'Cancel a task on its dispatcher; 409 when it is already final' })
  @HttpCode(200)
  @OperatorOrScope('tasks:write')
  @Answers(200, 'Task', 'The task, cancelled')
  @Refuses({ 404: 'not_found: no such task', 409: 'conflict: the task is already final', 502: 'bad_gateway: its dispatcher could not cancel it; try again' })
  async cancel(@Param('guid') guid: string) {
    return taskView(await this.tasks.cancel(guid));
  }

  @Post(':guid/rerun')
  @ApiOperation({ summary: 'A new task from a final task\'s template and brief, linked both ways (rerun_of, reruns)' })
  @OperatorOrScope('tasks:write')
  @Answers(201, 'Task', 'The new task, stored as pending')
  @Refuses({ 404: 'not_found: no such task', 409: 'conflict: the task is not final' })
  rerun(@Param('guid') guid: string, @CurrentPrincipal() principal: Principal) {
    return this.attempts.rerun(guid, `${principal.kind}:${principal.name}`);
  }

  @Post(':guid/callback')
  @ApiOperation({ summary: 'Final report from the dispatcher: Bearer callback token, X-Service-Signature over the raw body' })
  @CallbackAuth('required')
  @HttpCode(200)
  @Answers(200, 'CallbackAnswer', 'Recorded; the same final status again answers duplicate: true')
  @Refuses({ 409: 'conflict: another final status was reported before' })
  callback(@CallbackSender() caller: CallbackCaller, @Body() body: TaskCallbackDto) {
    return this.callbacks.callback(caller, body);
  }

  @Post(':guid/progress')
  @ApiOperation({ summary: 'Progress forwarded by the dispatcher: Bearer callback token' })
  @CallbackAuth('when-sent')
  @HttpCode(200)
  @Answers(200, 'CallbackAnswer', 'Recorded')
  @Refuses({ 409: 'conflict: the task is already final' })
  progress(@CallbackSender() caller: CallbackCaller, @Body() body: TaskProgressDto) {
    return this.callbacks.progress(caller, body);
  }
}
