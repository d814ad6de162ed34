import { Body, Controller, HttpCode, Post, Query, Res } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { Answers, AnswersEmpty, Refuses } from '../../shared/http/openapi-decorators';
import { AgentAuth, AgentKey } from '../auth/agent-auth';
import { PoolClaims } from './pool-claims';
import { ClaimDto, ClaimQueryDto } from './pools.dto';

const DEFAULT_WAIT_SECONDS = 25;

/** A warm pool's agent asks for its task (CONTRACT section 5, "Warm pools"). */
@ApiTags('agent')
@AgentAuth()
@Controller('agent')
export class PoolsController {
  constructor(private readonly claims: PoolClaims) {}

  @Post('claim')
  @HttpCode(200)
  @ApiOperation({ summary: 'A pool agent waits (long poll) for the task assigned to it; X-Agent-Key is the pool key' })
  @Answers(200, 'AgentClaimAnswer', 'The task assigned to this agent and the per-task key it uses from now on')
  @AnswersEmpty(204, 'The wait ended with no task; ask again')
  @Refuses({ 404: 'not_found: no such pool, or no such agent in it', 409: 'conflict: the agent was retired and gets no task' })
  async claim(@AgentKey() key: string, @Body() dto: ClaimDto, @Query() query: ClaimQueryDto, @Res({ passthrough: true }) response: Response) {
    const claim = await this.claims.claim(key, dto.pool, dto.agent_id, query.wait_seconds ?? DEFAULT_WAIT_SECONDS);
    if (!claim) {
      response.status(204);
      return undefined;
    }
    return { ok: true, data: claim };
  }
}
