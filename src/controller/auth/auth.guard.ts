import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
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

/** What authentication reads of a request (the hot lane makes one of its own): Passport's bearer strategy also looks at the body and the query. */
export interface CredentialRequest {
  headers: IncomingHttpHeaders;
  body?: unknown;
  query?: unknown;
  ip?: string;
}

/** What an endpoint needs of its caller, from its `@OperatorOnly()` / `@OperatorOrScope()`. */
export function authRequirementOf(reflector: Reflector, controller: Function, handler: Function): AuthRequirement | undefined {
  return reflector.getAllAndOverride<AuthRequirement | undefined>(AUTH_REQUIREMENT, [handler, controller]);
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
    const requirement = authRequirementOf(this.reflector, context.getClass(), context.getHandler());
    if (!requirement) return true;
    const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
    // The caller is known: an audited endpoint keeps its refusal (no interceptor runs after a guard refuses).
    request.principal = await this.principalOf(request, requirement, (user, refusal) => this.audit.refused(context, user, refusal));
    return true;
  }

  /**
   * The caller, when the credentials are accepted and give what `requirement` asks; otherwise
   * the refusal is thrown (401, or 429 while the address is throttled; 403 for a known caller,
   * after `refusedKnown` has seen it).
   */
  async principalOf(request: CredentialRequest, requirement: AuthRequirement, refusedKnown: (user: Principal, refusal: unknown) => void): Promise<Principal> {
    const credentials = parseAuthorization(request.headers.authorization);
    if (!credentials) throw this.auth.notAuthenticated();
    const strategy = credentials.scheme === 'token' ? this.operatorToken : this.oauthBearer;
    const { user } = await runStrategy<Principal>(strategy, request as IncomingMessage);
    if (!user) throw await this.auth.refusal(credentials.scheme, request.ip ?? 'unknown');
    try {
      this.auth.authorize(user, requirement);
    } catch (refusal) {
      refusedKnown(user, refusal);
      throw refusal;
    }
    return user;
  }
}
