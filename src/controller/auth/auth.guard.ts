import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { AuthService } from './auth.service';
import { AuthRequirement, Principal } from './principal';

export const AUTH_REQUIREMENT = 'atc:auth-requirement';

export interface AuthenticatedRequest extends Request {
  principal?: Principal;
}

/**
 * Operator token or OAuth access token, for endpoints marked with `@OperatorOnly()` or
 * `@OperatorOrScope(scope)`. Other Bearer tokens (task callbacks) have guards of their own.
 */
@Injectable()
export class OperatorOrClientGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly auth: AuthService,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const requirement = this.reflector.getAllAndOverride<AuthRequirement | undefined>(AUTH_REQUIREMENT, [
      context.getHandler(),
      context.getClass(),
    ]);
    if (!requirement) return true;
    const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
    const principal = await this.auth.authenticate(request.headers.authorization, request.ip ?? 'unknown');
    this.auth.authorize(principal, requirement);
    request.principal = principal;
    return true;
  }
}
