import { Body, Controller, Get, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { abortOnClose, LOG_FOLLOW_KEEP_ALIVE, streamText } from '../../shared/http/stream-text';
import { StreamSlots } from '../../shared/http/stream-slots';
import { AnswersWith, Answers, Refuses } from '../../shared/http/openapi-decorators';
import type { Response } from 'express';
import { ApiKeyAuth } from '../auth/api-key.guard';
import { CreateTaskDto, ListTasksQuery, LogsQuery } from './tasks.dto';
import { TasksService } from './tasks.service';

/** The task API (CONTRACT section 3), in the dispatcher's `{ok, data}` envelope. */
@ApiTags('tasks')
@ApiKeyAuth()
@Controller('tasks')
export class TasksController {
  constructor(
    private readonly tasks: TasksService,
    private readonly slots: StreamSlots,
  ) {}

  @Post()
  @ApiOperation({ summary: 'Accept a task (the seed request); the same task_id with the same body again answers 200' })
  @Answers(201, 'DispatcherTaskAnswer', 'Accepted: the task, pending')
  @Answers(200, 'DispatcherTaskAnswer', 'The same task_id with the same body: the existing task')
  @Refuses({ 409: 'conflict: the same task_id with a different body' })
  async create(@Body() dto: CreateTaskDto, @Res({ passthrough: true }) response: Response) {
    const { created, task } = await this.tasks.create(dto);
    response.status(created ? 201 : 200);
    return { ok: true, data: task };
  }

  @Get()
  @ApiOperation({ summary: 'Tasks, newest first' })
  @Answers(200, 'DispatcherTaskList', 'A page of tasks and the total')
  async list(@Query() query: ListTasksQuery) {
    return { ok: true, data: await this.tasks.list(query) };
  }

  @Get(':taskId')
  @ApiOperation({ summary: 'One task record' })
  @Answers(200, 'DispatcherTaskAnswer', 'The task')
  @Refuses({ 404: 'not_found: no such task' })
  async get(@Param('taskId') taskId: string) {
    return { ok: true, data: await this.tasks.get(taskId) };
  }

  @Post(':taskId/cancel')
  @HttpCode(200)
  @ApiOperation({ summary: 'Stop the agent and answer the task' })
  @Answers(200, 'DispatcherTaskAnswer', 'The task, cancelled')
  @Refuses({ 404: 'not_found: no such task', 409: 'conflict: the task is already final' })
  async cancel(@Param('taskId') taskId: string) {
    return { ok: true, data: await this.tasks.cancel(taskId) };
  }

  @Get(':taskId/logs')
  @ApiOperation({ summary: "The agent's output as text/plain (?tail=N lines); ?follow=true streams it (chunked text/plain) until the task is final" })
  @AnswersWith(200, 'text/plain', 'The output')
  @Refuses({ 404: 'not_found: no such task', 429: 'throttled: a follow beyond STREAMS_PER_REPLICA' })
  async logs(@Param('taskId') taskId: string, @Query() query: LogsQuery, @Res() response: Response): Promise<void> {
    if (query.follow) {
      // The controller follows for all its callers with one key: only this replica's cap applies here.
      this.slots.take(response);
      return streamText(response, await this.tasks.followLogs(taskId, query.tail, abortOnClose(response)), undefined, LOG_FOLLOW_KEEP_ALIVE);
    }
    response.type('text/plain; charset=utf-8').send(await this.tasks.logs(taskId, query.tail));
  }
}
