import { applyDecorators, CanActivate, createParamDecorator, ExecutionContext, Injectable, UseGuards } from '@nestjs/common';
import { ApiSecurity } from '@nestjs/swagger';
import type { Request } from 'express';
import { DomainError } from '../../shared/errors/domain-error';

const CHALLENGE = { 'WWW-Authenticate': 'AgentKey header="X-Agent-Key"' };

/** An agent request must carry `X-Agent-Key`; which task it opens is decided per request. */
@Injectable()
export class AgentKeyPresentGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    if (!context.switchToHttp().getRequest<Request>().header('x-agent-key')) {
      throw new DomainError('not_authenticated', 'X-Agent-Key header is required.', { headers: CHALLENGE });
    }
    return true;
  }
}

export function AgentAuth() {
  return applyDecorators(UseGuards(AgentKeyPresentGuard), ApiSecurity('agent_key'));
}

/** The caller's `X-Agent-Key`, for the per-task check. */
export const AgentKey = createParamDecorator((_data: unknown, context: ExecutionContext): string =>
  context.switchToHttp().getRequest<Request>().header('x-agent-key') ?? '');

export const AGENT_KEY_CHALLENGE = CHALLENGE;
