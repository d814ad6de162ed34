import { Inject, Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { LessThan, Repository } from 'typeorm';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { AuthThrottles } from '../auth/auth-throttles';
import { Scope } from '../auth/scopes';
import { newToken, tokenHash } from '../auth/secret-hash';
import { hashClientSecret, verifyClientSecret } from './client-secret';
import { OAuthAccessToken } from './oauth-access-token.entity';
import { OAuthClient } from './oauth-client.entity';
import { OAuthError } from './oauth-error';
import { TokenResponse } from './oauth.dto';
import { TokenRequest } from './token-request';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Expired tokens are kept this long (for inspection), then swept when new ones are issued. */
const EXPIRED_TOKEN_RETENTION_MS = 24 * 3600 * 1000;

/** Issues access tokens for the client credentials grant (RFC 6749 4.4). */
@Injectable()
export class OAuthTokensService {
  /** Checked against when the client does not exist, so both paths cost one scrypt. */
  private readonly decoyHash = hashClientSecret('decoy');

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly throttles: AuthThrottles,
    @InjectRepository(OAuthClient) private readonly clients: Repository<OAuthClient>,
    @InjectRepository(OAuthAccessToken) private readonly tokens: Repository<OAuthAccessToken>,
  ) {}

  async issue(request: TokenRequest, address: string): Promise<TokenResponse> {
    // Made-up ids share one key, so a caller cannot fill the cache with keys of its choosing.
    const clientKey = UUID.test(request.clientId) ? request.clientId.toLowerCase() : 'malformed';
    await this.throttles.assertAddressOpen(address);
    await this.throttles.assertClientOpen(clientKey);
    await this.throttles.countTokenRequest(address, clientKey);
    const client = await this.authenticateClient(request, clientKey, address);
    const scopes = grantedScopes(client.scopes, request.scopes);
    const accessToken = newToken('atc_at_');
    const ttl = this.config.oauthTokenTtlSeconds;
    await this.tokens.insert({
      tokenHash: tokenHash(accessToken),
      clientId: client.id,
      scopes,
      expiresAt: new Date(Date.now() + ttl * 1000),
    });
    await this.tokens.delete({ expiresAt: LessThan(new Date(Date.now() - EXPIRED_TOKEN_RETENTION_MS)) });
    return { access_token: accessToken, token_type: 'Bearer', expires_in: ttl, scope: scopes.join(' ') };
  }

  private async authenticateClient(request: TokenRequest, clientKey: string, address: string): Promise<OAuthClient> {
    const client = clientKey === 'malformed' ? null : await this.clients.findOneBy({ id: clientKey });
    const valid = await verifyClientSecret(request.clientSecret, client?.secretHash ?? (await this.decoyHash));
    if (client && valid) return client;
    await this.throttles.recordAddressFailure(address);
    await this.throttles.recordClientFailure(clientKey);
    throw new OAuthError('invalid_client', 'Client authentication failed: unknown client or wrong secret.');
  }
}

/** The requested scopes when all belong to the client; none requested means all of them. */
export function grantedScopes(clientScopes: Scope[], requested: string[]): Scope[] {
  if (requested.length === 0) return [...clientScopes];
  const outside = requested.filter((scope) => !(clientScopes as string[]).includes(scope));
  if (outside.length > 0) {
    throw new OAuthError('invalid_scope', `Scopes not granted to this client: ${outside.join(' ')}.`);
  }
  return requested as Scope[];
}
