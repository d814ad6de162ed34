import { applyDecorators, CanActivate, ExecutionContext, Inject, Injectable, UseGuards } from '@nestjs/common';
import { ApiSecurity } from '@nestjs/swagger';
import type { Request } from 'express';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { DomainError } from '../../shared/errors/domain-error';
import { secretsEqual } from './agent-keys';

const CHALLENGE = { 'WWW-Authenticate': 'ApiKey header="X-API-Key"' };

/** `X-API-Key` must equal API_KEY (compared in constant time). */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  canActivate(context: ExecutionContext): boolean {
    const given = context.switchToHttp().getRequest<Request>().header('x-api-key');
    if (!given) throw new DomainError('not_authenticated', 'X-API-Key header is required.', { headers: CHALLENGE });
    if (!secretsEqual(given, this.config.apiKey)) {
      throw new DomainError('authentication_failed', 'X-API-Key is not valid.', { headers: CHALLENGE });
    }
    return true;
  }
}

/** The task API's credential: the dispatcher's API_KEY in `X-API-Key`. */
export function ApiKeyAuth() {
  return applyDecorators(UseGuards(ApiKeyGuard), ApiSecurity('api_key'));
}
