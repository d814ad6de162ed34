import { applyDecorators, Body, Controller, Get, Headers, HttpCode, Param, Post, Put, Query, Req, Res } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiHeader, ApiOperation, ApiParam, ApiQuery, ApiTags } from '@nestjs/swagger';
import { Answers, AnswersWith, Refuses } from '../../shared/http/openapi-decorators';
import type { Request, Response } from 'express';
import { AgentAuth, AgentKey } from '../auth/agent-auth';
import { CheckbackDto, CheckinDto, ProgressDto } from './agent.dto';
import { AgentService } from './agent.service';

/** Express 5 gives a `*key` wildcard as its path segments. */
function objectKeyOf(param: string | string[]): string {
  return Array.isArray(param) ? param.join('/') : param;
}

/** The object key (`{key}`, slashes allowed) and the two ways to name the task. */
function ObjectDocs(summary: string) {
  return applyDecorators(
    ApiOperation({ summary }),
    ApiParam({ name: 'key', description: 'The object key; may contain slashes', example: 'results/0b4c6f8e-3f1a-4d2b-9c7e-5a6b7c8d9e0f/result.json' }),
    ApiQuery({ name: 'task_id', required: false, description: 'The task the key is for' }),
    ApiHeader({ name: 'X-Task-Id', required: false, description: 'The task the key is for (instead of task_id)' }),
  );
}

/** The agent protocol (CONTRACT section 3), behind `X-Agent-Key`. */
@ApiTags('agent')
@AgentAuth()
@Controller('agent')
export class AgentController {
  constructor(private readonly agent: AgentService) {}

  @Post('checkin')
  @HttpCode(200)
  @ApiOperation({ summary: 'The agent started: starting becomes running; answers the brief key and env' })
  @Answers(200, 'AgentCheckinAnswer', 'The brief key and the env')
  @Refuses({ 404: 'not_found: no such task', 409: 'conflict: the task is already final' })
  async checkin(@AgentKey() key: string, @Body() dto: CheckinDto) {
    return { ok: true, data: await this.agent.checkin(key, dto.task_id) };
  }

  @Post('progress')
  @HttpCode(200)
  @ApiOperation({ summary: 'Progress: percentage 0..100, message, data' })
  @Answers(200, 'AgentOk', 'Recorded')
  @Refuses({ 404: 'not_found: no such task', 409: 'conflict: the task is already final' })
  async progress(@AgentKey() key: string, @Body() dto: ProgressDto) {
    await this.agent.progress(key, dto);
    return { ok: true };
  }

  @Post('checkback')
  @HttpCode(200)
  @ApiOperation({ summary: 'The final report: completed or failed; the same again answers 200' })
  @Answers(200, 'AgentOk', 'Recorded')
  @Refuses({ 404: 'not_found: no such task', 409: 'conflict: a different final report came before' })
  async checkback(@AgentKey() key: string, @Body() dto: CheckbackDto) {
    await this.agent.checkback(key, dto);
    return { ok: true };
  }

  @Get('objects/*key')
  @ObjectDocs('Read the task\'s brief or a pinned skill package')
  @AnswersWith(200, 'application/octet-stream', 'The object')
  @Refuses({ 404: 'not_found: no such object' })
  async read(
    @AgentKey() key: string,
    @Param('key') objectKey: string | string[],
    @Query('task_id') taskId: string | undefined,
    @Headers('x-task-id') taskHeader: string | undefined,
    @Res() response: Response,
  ): Promise<void> {
    const object = await this.agent.readObject(key, objectKeyOf(objectKey), taskId ?? taskHeader);
    response.setHeader('Content-Type', 'application/octet-stream');
    response.setHeader('Content-Length', String(object.size));
    object.body.pipe(response);
  }

  @Put('objects/*key')
  @ObjectDocs('Write a result object under results/<task_id>/')
  @ApiConsumes('application/octet-stream')
  @ApiBody({ schema: { type: 'string', format: 'binary' } })
  @Answers(200, 'AgentObjectStored', 'Stored')
  @Refuses({ 409: 'conflict: the task is already final' })
  async write(
    @AgentKey() key: string,
    @Param('key') objectKey: string | string[],
    @Query('task_id') taskId: string | undefined,
    @Headers('x-task-id') taskHeader: string | undefined,
    @Req() request: Request,
  ) {
    const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    const stored = await this.agent.writeObject(key, objectKeyOf(objectKey), body, request.header('content-type'), taskId ?? taskHeader);
    return { ok: true, data: stored };
  }
}
