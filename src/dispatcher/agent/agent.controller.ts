import { Body, Controller, Get, Headers, HttpCode, Param, Post, Put, Query, Req, Res } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { AgentAuth, AgentKey } from '../auth/agent-auth';
import { CheckbackDto, CheckinDto, ProgressDto } from './agent.dto';
import { AgentService } from './agent.service';

/** Express 5 gives a `*key` wildcard as its path segments. */
function objectKeyOf(param: string | string[]): string {
  return Array.isArray(param) ? param.join('/') : param;
}

/** The agent protocol (CONTRACT section 3), behind `X-Agent-Key`. */
@ApiTags('agent')
@AgentAuth()
@Controller('agent')
export class AgentController {
  constructor(private readonly agent: AgentService) {}

  @Post('checkin')
  @HttpCode(200)
  async checkin(@AgentKey() key: string, @Body() dto: CheckinDto) {
    return { ok: true, data: await this.agent.checkin(key, dto.task_id) };
  }

  @Post('progress')
  @HttpCode(200)
  async progress(@AgentKey() key: string, @Body() dto: ProgressDto) {
    await this.agent.progress(key, dto);
    return { ok: true };
  }

  @Post('checkback')
  @HttpCode(200)
  async checkback(@AgentKey() key: string, @Body() dto: CheckbackDto) {
    await this.agent.checkback(key, dto);
    return { ok: true };
  }

  @Get('objects/*key')
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
