import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { runPrepared } from '../../shared/database/statements';
import { DomainError } from '../../shared/errors/domain-error';
import { AuthThrottles } from './auth-throttles';
import { OperatorTokensService } from './operator-tokens.service';
import { AuthRequirement, CONFIG_OPERATOR_ID, Principal, satisfies } from './principal';
import { Scope, SCOPES } from './scopes';
import { isExpired, safeEqual, tokenHash } from './secret-hash';

export const WWW_AUTHENTICATE = 'Token realm="api", Bearer realm="api"';

/**
 * Resolves credentials to principals for the strategies (`operator-token.strategy.ts`,
 * `oauth-bearer.strategy.ts`), builds the refusals and enforces what an endpoint needs.
 */
@Injectable()
export class AuthService {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly throttles: AuthThrottles,
    private readonly operatorTokens: OperatorTokensService,
    @InjectDataSource() private readonly db: DataSource,
  ) {}

  /** 401 `not_authenticated`: no `Authorization` header of a scheme the API takes. */
  notAuthenticated(): DomainError {
    return new DomainError('not_authenticated', 'Authentication credentials were not provided.', {
      headers: { 'WWW-Authenticate': WWW_AUTHENTICATE },
    });
  }

  /**
   * 401 `authentication_failed` for credentials a strategy did not accept, once the failure is
   * counted; 429 instead while the address is throttled. Failures are throttled, not callers:
   * a valid credential from a throttled address still works.
   */
  async refusal(scheme: 'token' | 'bearer', address: string): Promise<DomainError> {
    await this.throttles.assertAddressOpen(address);
    await this.throttles.recordAddressFailure(address);
    const challenge = scheme === 'bearer' ? 'Bearer realm="api", error="invalid_token"' : WWW_AUTHENTICATE;
    return new DomainError('authentication_failed', 'Invalid, revoked or expired credentials.', {
      headers: { 'WWW-Authenticate': challenge },
    });
  }

  /** 403 `permission_denied` when the principal lacks what the endpoint needs. */
  authorize(principal: Principal, requirement: AuthRequirement): void {
    if (satisfies(principal, requirement)) return;
    if (requirement.operatorOnly || requirement.scope === null) {
      throw new DomainError('permission_denied', 'This endpoint needs an operator token.');
    }
    throw new DomainError('permission_denied', `This endpoint needs an operator token or the scope ${requirement.scope}.`, {
      headers: { 'WWW-Authenticate': `Bearer realm="api", error="insufficient_scope", scope="${requirement.scope}"` },
      details: { required_scope: requirement.scope },
    });
  }

  /** An operator token: API_TOKEN, or one made with the CLI. */
  async resolveOperator(token: string): Promise<Principal | null> {
    if (this.config.apiToken && safeEqual(token, this.config.apiToken)) {
      return { kind: 'operator', id: CONFIG_OPERATOR_ID, name: 'API_TOKEN', scopes: [...SCOPES] };
    }
    const record = await this.operatorTokens.verify(token);
    return record ? { kind: 'operator', id: record.id, name: record.name, scopes: [...SCOPES] } : null;
  }

  /**
   * An OAuth access token: found by its hash, live, and of a client that still exists. One
   * prepared statement with the client joined: every request of a client (a dispatcher's
   * heartbeat every few seconds among them) asks it, and TypeORM's `findOne` with the relation
   * built two statements, a DISTINCT page of ids and the rows, each time.
   */
  async resolveClient(token: string): Promise<Principal | null> {
    const hash = tokenHash(token);
    const [record] = await runPrepared<ClientTokenRow>(this.db, CLIENT_TOKEN, [hash]);
    if (!record || !safeEqual(hash, record.token_hash) || isExpired(record.expires_at)) return null;
    const scopes = record.scopes.filter((scope) => record.client_scopes.includes(scope));
    return { kind: 'client', id: record.client_id, name: record.client_name, scopes };
  }
}

const CLIENT_TOKEN = `SELECT t.token_hash, t.client_id, t.scopes, t.expires_at, c.name AS client_name, c.scopes AS client_scopes
  FROM "controller"."oauth_access_tokens" t JOIN "controller"."oauth_clients" c ON c.id = t.client_id
  WHERE t.token_hash = $1`;

interface ClientTokenRow {
  token_hash: string;
  client_id: string;
  scopes: Scope[];
  expires_at: Date;
  client_name: string;
  client_scopes: Scope[];
}

/** `Token x` / `Bearer x` (scheme case-insensitive); null for no header or another scheme. */
export function parseAuthorization(header: string | undefined): { scheme: 'token' | 'bearer'; value: string } | null {
  if (!header) return null;
  const match = /^\s*(\S+)(?:\s+(.*))?$/.exec(header);
  if (!match) return null;
  const scheme = match[1].toLowerCase();
  if (scheme !== 'token' && scheme !== 'bearer') return null;
  return { scheme, value: (match[2] ?? '').trim() };
}
