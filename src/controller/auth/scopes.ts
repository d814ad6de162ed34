/** The OAuth scopes of CONTRACT section 2 and section 5 (subscriptions). Operators hold all of them. */
export const SCOPES = [
  'tasks:read',
  'tasks:write',
  'workflows:read',
  'workflows:write',
  'skills:read',
  'skills:write',
  'dispatchers:read',
  'dispatchers:write',
  'webhooks:read',
  'subscriptions:read',
  'subscriptions:write',
] as const;

export type Scope = (typeof SCOPES)[number];

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

/** Names the values that are not scopes, in the order given. */
export function unknownScopes(values: string[]): string[] {
  return values.filter((value) => !isScope(value));
}

/** Splits an RFC 6749 `scope` parameter (space-delimited) into its distinct values. */
export function parseScopeParameter(scope: string | undefined | null): string[] {
  if (!scope) return [];
  return [...new Set(scope.split(' ').filter(Boolean))];
}
