import { Inject, Injectable } from '@nestjs/common';
import { CACHE, Cache } from '../../shared/cache/cache';
import { FallbackCache } from '../../shared/cache/fallback-cache';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { throttled, Throttle } from './throttle';

const TOKEN_REQUEST_WINDOW_SECONDS = 60;

/**
 * The counters that slow down credential guessing, kept in the shared cache:
 * failed authentications per address (every scheme) and per OAuth client, and
 * token endpoint requests per client and per address.
 */
@Injectable()
export class AuthThrottles {
  private readonly addressFailures: Throttle;
  private readonly clientFailures: Throttle;
  private readonly tokenRequests: Throttle;

  constructor(@Inject(APP_CONFIG) config: AppConfig, @Inject(CACHE) shared: Cache) {
    const { authFailureLimit: limit, authFailureWindowSeconds: window } = config;
    const cache = new FallbackCache(shared, 'authentication throttles');
    this.addressFailures = new Throttle(cache, 'auth:fail:addr:', limit, window);
    this.clientFailures = new Throttle(cache, 'auth:fail:client:', limit, window);
    this.tokenRequests = new Throttle(cache, 'auth:token-req:', config.oauthTokenRateLimit, TOKEN_REQUEST_WINDOW_SECONDS);
  }

  assertAddressOpen(address: string): Promise<void> {
    return this.addressFailures.assertOpen([address], 'Too many failed authentications from this address; try again later.');
  }

  async recordAddressFailure(address: string): Promise<void> {
    await this.addressFailures.count(address);
  }

  assertClientOpen(clientId: string): Promise<void> {
    return this.clientFailures.assertOpen([clientId], 'Too many failed authentications for this client; try again later.');
  }

  async recordClientFailure(clientId: string): Promise<void> {
    await this.clientFailures.count(clientId);
  }

  /** Counts one token request for the address and the client; 429 past the rate limit. */
  async countTokenRequest(address: string, clientId: string): Promise<void> {
    for (const key of [`addr:${address}`, `client:${clientId}`]) {
      const wait = await this.tokenRequests.hit(key);
      if (wait !== null) throw throttled(wait, 'Too many token requests; reuse the access token until it expires.');
    }
  }
}
