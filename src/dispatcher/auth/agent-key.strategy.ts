import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import type { Request } from 'express';
import { Strategy as CustomStrategy } from 'passport-custom';
import { strategyRegistry } from '../../shared/auth/passport-strategy';
import { DomainError } from '../../shared/errors/domain-error';

export const AGENT_KEY_CHALLENGE = { 'WWW-Authenticate': 'AgentKey header="X-Agent-Key"' };

/**
 * An agent request must carry `X-Agent-Key`. Which task the key opens depends on the task the
 * request names (in its body or its path), so `AgentAccess` decides that per request.
 */
@Injectable()
export class AgentKeyStrategy extends PassportStrategy(CustomStrategy, 'agent-key') {
  constructor() {
    super();
  }

  protected getPassportInstance() {
    return strategyRegistry;
  }

  validate(request: Request): string {
    const key = request.header('x-agent-key');
    if (!key) throw new DomainError('not_authenticated', 'X-Agent-Key header is required.', { headers: AGENT_KEY_CHALLENGE });
    return key;
  }
}
