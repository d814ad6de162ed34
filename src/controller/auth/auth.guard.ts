import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import { runStrategy } from '../../shared/auth/passport-strategy';
import { AuditTrail } from '../audit/audit-trail';
import { AuthService, parseAuthorization } from './auth.service';
import { OAuthBearerStrategy } from './oauth-bearer.strategy';
import { OperatorTokenStrategy } from './operator-token.strategy';
import { AuthRequirement, Principal } from './principal';

export const AUTH_REQUIREMENT = 'atc:auth-requirement';

export interface AuthenticatedRequest extends Request {
  principal?: Principal;
}

/**
 * Operator token or OAuth access token, for endpoints marked with `@OperatorOnly()` or
 * `@OperatorOrScope(scope)`. The header's scheme picks the one strategy that reads it;
 * whatever that strategy does not accept is refused here, the same way for both schemes.
 * Other Bearer tokens (task callbacks) have guards of their own.
 */
@Injectable()
export class OperatorOrClientGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly auth: AuthService,
    private readonly operatorToken: OperatorTokenStrategy,
    private readonly oauthBearer: OAuthBearerStrategy,
    private readonly audit: AuditTrail,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const requirement = this.reflector.getAllAndOverride<AuthRequirement | undefined>(AUTH_REQUIREMENT, [
      context.getHandler(),
      context.getClass(),
    ]);
    if (!requirement) return true;
    const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
    const credentials = parseAuthorization(request.headers.authorization);
    if (!credentials) throw this.auth.notAuthenticated();
    const strategy = credentials.scheme === 'token' ? this.operatorToken : this.oauthBearer;
    const { user } = await runStrategy<Principal>(strategy, request, context.switchToHttp().getResponse<Response>());
    if (!user) throw await this.auth.refusal(credentials.scheme, request.ip ?? 'unknown');
    try {
      this.auth.authorize(user, requirement);
    } catch (refusal) {
      // The caller is known: an audited endpoint keeps its refusal (no interceptor runs after a guard refuses).
      this.audit.refused(context, user, refusal);
      throw refusal;
    }
    request.principal = user;
    return true;
  }
}
