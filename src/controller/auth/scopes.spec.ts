import { grantedScopes } from '../oauth/oauth-tokens.service';
import { OAuthError } from '../oauth/oauth-error';
import { AuthRequirement, Principal, satisfies } from './principal';
import { parseScopeParameter, Scope, SCOPES, unknownScopes } from './scopes';

const client = (...scopes: Scope[]): Principal => ({ kind: 'client', id: 'c', name: 'ci', scopes });
const operator: Principal = { kind: 'operator', id: 'o', name: 'ops', scopes: [...SCOPES] };
const needs = (scope: Scope | null): AuthRequirement => ({ operatorOnly: false, scope });
const operatorOnly: AuthRequirement = { operatorOnly: true };

describe('scope checks', () => {
  it('lets an operator through every requirement', () => {
    expect(satisfies(operator, operatorOnly)).toBe(true);
    for (const scope of SCOPES) expect(satisfies(operator, needs(scope))).toBe(true);
  });

  it('lets a client through only with the scope the endpoint names', () => {
    expect(satisfies(client('tasks:read'), needs('tasks:read'))).toBe(true);
    expect(satisfies(client('tasks:read'), needs('tasks:write'))).toBe(false);
    expect(satisfies(client('tasks:write'), needs('tasks:read'))).toBe(false);
    expect(satisfies(client(), needs('skills:read'))).toBe(false);
  });

  it('never lets a client through an operator-only endpoint, whatever its scopes', () => {
    expect(satisfies(client(...SCOPES), operatorOnly)).toBe(false);
  });

  it('lets any client through an endpoint that needs no scope', () => {
    expect(satisfies(client(), needs(null))).toBe(true);
  });

  it('knows exactly the eleven scopes of the contract', () => {
    expect(SCOPES.join(' ')).toBe(
      'tasks:read tasks:write workflows:read workflows:write skills:read skills:write dispatchers:read dispatchers:write webhooks:read subscriptions:read subscriptions:write',
    );
    expect(unknownScopes(['tasks:read', 'tasks:admin', 'webhooks:write', 'TASKS:READ'])).toEqual(['tasks:admin', 'webhooks:write', 'TASKS:READ']);
  });

  it('reads the space-delimited scope parameter of RFC 6749 3.3', () => {
    expect(parseScopeParameter(undefined)).toEqual([]);
    expect(parseScopeParameter('')).toEqual([]);
    expect(parseScopeParameter('tasks:read  skills:read tasks:read')).toEqual(['tasks:read', 'skills:read']);
  });
});

describe('granted scopes of a token request', () => {
  const clientScopes: Scope[] = ['tasks:read', 'tasks:write'];

  it('grants every scope of the client when none is asked for', () => {
    expect(grantedScopes(clientScopes, [])).toEqual(['tasks:read', 'tasks:write']);
  });

  it('grants a subset as asked', () => {
    expect(grantedScopes(clientScopes, ['tasks:write'])).toEqual(['tasks:write']);
  });

  it('refuses a scope outside the client with invalid_scope naming it', () => {
    const refuse = () => grantedScopes(clientScopes, ['tasks:read', 'skills:write']);
    expect(refuse).toThrow(OAuthError);
    expect(refuse).toThrow(/skills:write/);
    try {
      refuse();
    } catch (error) {
      expect((error as OAuthError).error).toBe('invalid_scope');
      expect((error as OAuthError).status).toBe(400);
    }
  });
});
