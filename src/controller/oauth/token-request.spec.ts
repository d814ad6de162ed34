import { OAuthError } from './oauth-error';
import { parseTokenRequest } from './token-request';

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

function refusal(body: unknown, authorization?: string): { error: string; status: number } {
  try {
    parseTokenRequest(body, authorization);
  } catch (error) {
    if (error instanceof OAuthError) return { error: error.error, status: error.status };
    throw error;
  }
  throw new Error('the request was accepted');
}

describe('token request parsing (RFC 6749 4.4.2 and 2.3.1)', () => {
  it('reads client credentials from HTTP Basic, form-decoding both parts', () => {
    expect(parseTokenRequest({ grant_type: 'client_credentials', scope: 'tasks:read' }, basic('my%20id', 'a%2Bb+c'))).toEqual({
      clientId: 'my id',
      clientSecret: 'a+b c',
      scopes: ['tasks:read'],
    });
  });

  it('reads client credentials from the body, and a scope list from JSON', () => {
    expect(
      parseTokenRequest({ grant_type: 'client_credentials', client_id: 'id', client_secret: 's', scope: ['tasks:read', 'skills:read'] }, undefined),
    ).toEqual({ clientId: 'id', clientSecret: 's', scopes: ['tasks:read', 'skills:read'] });
  });

  it('accepts the same client_id in the body next to HTTP Basic', () => {
    expect(parseTokenRequest({ grant_type: 'client_credentials', client_id: 'id' }, basic('id', 's')).clientId).toBe('id');
  });

  it.each([
    ['no grant_type', { client_id: 'id', client_secret: 's' }, undefined, 'invalid_request', 400],
    ['another grant type', { grant_type: 'password', client_id: 'id', client_secret: 's' }, undefined, 'unsupported_grant_type', 400],
    ['a repeated parameter', { grant_type: ['client_credentials', 'client_credentials'] }, undefined, 'invalid_request', 400],
    ['a non-string parameter', { grant_type: 'client_credentials', client_id: 7, client_secret: 's' }, undefined, 'invalid_request', 400],
    ['a body that is not an object', 'grant_type=client_credentials', undefined, 'invalid_request', 400],
    ['two client authentication methods', { grant_type: 'client_credentials', client_secret: 's' }, basic('id', 's'), 'invalid_request', 400],
    ['a different client_id next to Basic', { grant_type: 'client_credentials', client_id: 'other' }, basic('id', 's'), 'invalid_request', 400],
    ['no client authentication', { grant_type: 'client_credentials' }, undefined, 'invalid_client', 401],
    ['a client_id without secret', { grant_type: 'client_credentials', client_id: 'id' }, undefined, 'invalid_client', 401],
    ['malformed Basic credentials', { grant_type: 'client_credentials' }, 'Basic bm9jb2xvbg==', 'invalid_client', 401],
  ])('refuses %s', (_name, body, authorization, error, status) => {
    expect(refusal(body, authorization)).toEqual({ error, status });
  });
});
