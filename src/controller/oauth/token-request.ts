import { parseScopeParameter } from '../auth/scopes';
import { OAuthError } from './oauth-error';

/** A client credentials token request (RFC 6749 4.4.2), with its client's credentials. */
export interface TokenRequest {
  clientId: string;
  clientSecret: string;
  /** Requested scopes; empty means every scope of the client. */
  scopes: string[];
}

const PARAMETERS = ['grant_type', 'scope', 'client_id', 'client_secret'] as const;
type Parameter = (typeof PARAMETERS)[number];

/**
 * Reads a token request from a form or JSON body and the `Authorization` header.
 * The client authenticates with HTTP Basic (RFC 6749 2.3.1, form-encoded id and secret)
 * or with `client_id`/`client_secret` in the body, never both.
 */
export function parseTokenRequest(body: unknown, authorization: string | undefined): TokenRequest {
  const params = readParameters(body);
  if (!params.grant_type) throw new OAuthError('invalid_request', 'The grant_type parameter is required.');
  if (params.grant_type !== 'client_credentials') {
    throw new OAuthError('unsupported_grant_type', `Only grant_type=client_credentials is supported (got "${params.grant_type}").`);
  }
  const scopes = parseScopeParameter(params.scope);
  const basic = parseBasic(authorization);
  if (basic) {
    if (params.client_secret !== undefined || (params.client_id !== undefined && params.client_id !== basic.clientId)) {
      throw new OAuthError('invalid_request', 'Authenticate the client with HTTP Basic or with client_id and client_secret, not both.');
    }
    return { ...basic, scopes };
  }
  if (!params.client_id || !params.client_secret) {
    throw new OAuthError('invalid_client', 'Client authentication is required: HTTP Basic, or client_id and client_secret.');
  }
  return { clientId: params.client_id, clientSecret: params.client_secret, scopes };
}

function readParameters(body: unknown): Partial<Record<Parameter, string>> {
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw new OAuthError('invalid_request', 'The request body must be form-encoded parameters or a JSON object.');
  }
  const source = body as Record<string, unknown>;
  const params: Partial<Record<Parameter, string>> = {};
  for (const name of PARAMETERS) {
    const value = source[name];
    if (value === undefined || value === '') continue;
    if (name === 'scope' && Array.isArray(value) && value.every((item) => typeof item === 'string')) {
      params.scope = value.join(' ');
    } else if (Array.isArray(value)) {
      throw new OAuthError('invalid_request', `The ${name} parameter must not be repeated.`);
    } else if (typeof value !== 'string') {
      throw new OAuthError('invalid_request', `The ${name} parameter must be a string.`);
    } else {
      params[name] = value;
    }
  }
  return params;
}

/** HTTP Basic client credentials, or null when the header uses another scheme or none. */
function parseBasic(authorization: string | undefined): { clientId: string; clientSecret: string } | null {
  const match = /^\s*basic(?:\s+(\S*))?\s*$/i.exec(authorization ?? '');
  if (!match) return null;
  const decoded = Buffer.from(match[1] ?? '', 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw new OAuthError('invalid_client', 'The HTTP Basic credentials are malformed.');
  try {
    return { clientId: formDecode(decoded.slice(0, colon)), clientSecret: formDecode(decoded.slice(colon + 1)) };
  } catch {
    throw new OAuthError('invalid_client', 'The HTTP Basic credentials are malformed.');
  }
}

function formDecode(value: string): string {
  return decodeURIComponent(value.replace(/\+/g, ' '));
}
