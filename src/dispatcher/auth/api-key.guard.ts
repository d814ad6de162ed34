import { applyDecorators, CanActivate, ExecutionContext, Injectable, UseGuards } from '@nestjs/common';
import { ApiSecurity, ApiUnauthorizedResponse } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { runStrategy } from '../../shared/auth/passport-strategy';
import { ApiKeyCaller, ApiKeyStrategy } from './api-key.strategy';

/** Runs `ApiKeyStrategy`, which refuses with the contract's errors itself. */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(private readonly strategy: ApiKeyStrategy) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const { user } = await runStrategy<ApiKeyCaller>(this.strategy, http.getRequest<Request>(), http.getResponse<Response>());
    if (!user) throw new Error('dispatcher-api-key strategy failed without a refusal');
    return true;
  }
}

/** The task API's credential: the dispatcher's API_KEY in `X-API-Key`. */
export function ApiKeyAuth() {
  return applyDecorators(
    UseGuards(ApiKeyGuard),
    ApiSecurity('api_key'),
    ApiUnauthorizedResponse({ description: 'not_authenticated or authentication_failed: X-API-Key missing or wrong' }),
  );
}
