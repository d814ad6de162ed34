import { applyDecorators, createParamDecorator, ExecutionContext, SetMetadata, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiForbiddenResponse, ApiSecurity, ApiTooManyRequestsResponse, ApiUnauthorizedResponse } from '@nestjs/swagger';
import { AUTH_REQUIREMENT, AuthenticatedRequest, OperatorOrClientGuard } from './auth.guard';
import { AuthRequirement, Principal } from './principal';
import { Scope } from './scopes';

export type { Principal } from './principal';
export type { Scope } from './scopes';
export { SCOPES } from './scopes';

function authDecorators(requirement: AuthRequirement, forbidden?: string) {
  // An OAuth access token is never enough for an operator-only endpoint: the document names only the operator token there.
  const schemes = requirement.operatorOnly ? [ApiSecurity('token')] : [ApiSecurity('token'), ApiBearerAuth()];
  return applyDecorators(
    SetMetadata(AUTH_REQUIREMENT, requirement),
    UseGuards(OperatorOrClientGuard),
    ...schemes,
    ApiUnauthorizedResponse({ description: 'not_authenticated or authentication_failed' }),
    ApiTooManyRequestsResponse({ description: 'throttled: too many failed authentications from this address' }),
    ...(forbidden ? [ApiForbiddenResponse({ description: forbidden })] : []),
  );
}

/** An operator token (`Authorization: Token`), or an OAuth access token holding `scope`. */
export function OperatorOrScope(scope: Scope) {
  return authDecorators({ operatorOnly: false, scope }, `permission_denied: needs an operator token or the scope ${scope}`);
}

/** An operator token only (`Authorization: Token`). */
export function OperatorOnly() {
  return authDecorators({ operatorOnly: true }, 'permission_denied: needs an operator token (an OAuth access token is refused)');
}

/** Any authenticated caller: an operator, or an OAuth client whatever its scopes. */
export function Authenticated() {
  return authDecorators({ operatorOnly: false, scope: null });
}

/** The authenticated caller of an endpoint marked with one of the decorators above. */
export const CurrentPrincipal = createParamDecorator((_data: unknown, context: ExecutionContext): Principal => {
  const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
  if (!request.principal) throw new Error('CurrentPrincipal used on an endpoint without an auth decorator');
  return request.principal;
});
