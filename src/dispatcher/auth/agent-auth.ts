import { applyDecorators, CanActivate, createParamDecorator, ExecutionContext, Injectable, UseGuards } from '@nestjs/common';
import { ApiForbiddenResponse, ApiSecurity, ApiUnauthorizedResponse } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { runStrategy } from '../../shared/auth/passport-strategy';
import { AgentKeyStrategy } from './agent-key.strategy';

export { AGENT_KEY_CHALLENGE } from './agent-key.strategy';

interface AgentRequest extends Request {
  agentKey?: string;
}

/** Runs `AgentKeyStrategy`; which task the key opens is decided per request (`AgentAccess`). */
@Injectable()
export class AgentKeyGuard implements CanActivate {
  constructor(private readonly strategy: AgentKeyStrategy) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const request = http.getRequest<AgentRequest>();
    const { user } = await runStrategy<string>(this.strategy, request, http.getResponse<Response>());
    if (!user) throw new Error('agent-key strategy failed without a refusal');
    request.agentKey = user;
    return true;
  }
}

export function AgentAuth() {
  return applyDecorators(
    UseGuards(AgentKeyGuard),
    ApiSecurity('agent_key'),
    ApiUnauthorizedResponse({ description: 'not_authenticated or authentication_failed: X-Agent-Key missing or no key at all' }),
    ApiForbiddenResponse({ description: "permission_denied: the key is another task's, or the object is not this task's" }),
  );
}

/** The caller's `X-Agent-Key`, for the per-task check. */
export const AgentKey = createParamDecorator((_data: unknown, context: ExecutionContext): string =>
  context.switchToHttp().getRequest<AgentRequest>().agentKey ?? '');
