import { Body, Controller, Get, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import { ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import { abortOnClose, streamText } from '../../shared/http/stream-text';
import type { Response } from 'express';
import { ApiKeyAuth } from '../auth/api-key.guard';
import { CreateTaskDto, ListTasksQuery, LogsQuery } from './tasks.dto';
import { TasksService } from './tasks.service';

/** The task API (CONTRACT section 3), in the dispatcher's `{ok, data}` envelope. */
@ApiTags('tasks')
@ApiKeyAuth()
@Controller('tasks')
export class TasksController {
  constructor(private readonly tasks: TasksService) {}

  @Post()
  async create(@Body() dto: CreateTaskDto, @Res({ passthrough: true }) response: Response) {
    const { created, task } = await this.tasks.create(dto);
    response.status(created ? 201 : 200);
    return { ok: true, data: task };
  }

  @Get()
  async list(@Query() query: ListTasksQuery) {
    return { ok: true, data: await this.tasks.list(query) };
  }

  @Get(':taskId')
  async get(@Param('taskId') taskId: string) {
    return { ok: true, data: await this.tasks.get(taskId) };
  }

  @Post(':taskId/cancel')
  @HttpCode(200)
  async cancel(@Param('taskId') taskId: string) {
    return { ok: true, data: await this.tasks.cancel(taskId) };
  }

  @Get(':taskId/logs')
  @ApiOperation({ summary: 'The agent output as text/plain (?tail=N); ?follow=true streams it (chunked text/plain) until the task is final' })
  @ApiProduces('text/plain')
  async logs(@Param('taskId') taskId: string, @Query() query: LogsQuery, @Res() response: Response): Promise<void> {
    if (query.follow) return streamText(response, await this.tasks.followLogs(taskId, query.tail, abortOnClose(response)));
    response.type('text/plain; charset=utf-8').send(await this.tasks.logs(taskId, query.tail));
  }
}
