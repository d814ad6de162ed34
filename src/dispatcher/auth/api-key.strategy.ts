import { Inject, Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import type { Request } from 'express';
import { Strategy as CustomStrategy } from 'passport-custom';
import { strategyRegistry } from '../../shared/auth/passport-strategy';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { DomainError } from '../../shared/errors/domain-error';
import { secretsEqual } from './agent-keys';

export const API_KEY_CHALLENGE = { 'WWW-Authenticate': 'ApiKey header="X-API-Key"' };

/** Who holds the dispatcher's API_KEY: its controller. */
export interface ApiKeyCaller {
  kind: 'controller';
}

/** `X-API-Key` must equal API_KEY (compared in constant time). */
@Injectable()
export class ApiKeyStrategy extends PassportStrategy(CustomStrategy, 'dispatcher-api-key') {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    super();
  }

  protected getPassportInstance() {
    return strategyRegistry;
  }

  validate(request: Request): ApiKeyCaller {
    return apiKeyCaller(request.header('x-api-key'), this.config.apiKey);
  }
}

/** The check itself, for the strategy and for the hot lane's task intake (which has no Express request). */
export function apiKeyCaller(given: string | undefined, apiKey: string): ApiKeyCaller {
  if (!given) throw new DomainError('not_authenticated', 'X-API-Key header is required.', { headers: API_KEY_CHALLENGE });
  if (!secretsEqual(given, apiKey)) {
    throw new DomainError('authentication_failed', 'X-API-Key is not valid.', { headers: API_KEY_CHALLENGE });
  }
  return { kind: 'controller' };
}
