import { Scope } from './scopes';

/** Who made a request: an operator (every scope) or an OAuth client (its token's scopes). */
export interface Principal {
  kind: 'operator' | 'client';
  /** The operator token's id, or the OAuth client's `client_id`. */
  id: string;
  name: string;
  scopes: Scope[];
}

/** The principal of the `API_TOKEN` setting, which has no row of its own. */
export const CONFIG_OPERATOR_ID = '00000000-0000-0000-0000-000000000000';

/**
 * What an endpoint needs: an operator; or an operator or a client holding `scope`
 * (`scope: null`: any authenticated caller).
 */
export type AuthRequirement = { operatorOnly: true } | { operatorOnly: false; scope: Scope | null };

export function satisfies(principal: Principal, requirement: AuthRequirement): boolean {
  if (principal.kind === 'operator') return true;
  if (requirement.operatorOnly) return false;
  return requirement.scope === null || principal.scopes.includes(requirement.scope);
}
