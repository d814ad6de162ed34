import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { embeddedDispatcherCredential, EMBEDDED_DISPATCHER_CLIENT_NAME, usesEmbeddedDispatcherClient } from '../../shared/auth/embedded-dispatcher-client';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { hashClientSecret, verifyClientSecret } from './client-secret';
import { OAuthClient } from './oauth-client.entity';

/**
 * In the `all` role, creates (or reuses, or repairs) the OAuth client the dispatcher next door
 * checks in with, limited to `dispatchers:write`: the dispatcher never holds the operator token.
 */
@Injectable()
export class EmbeddedDispatcherClientService implements OnApplicationBootstrap {
  private readonly logger = new Logger('OAuthClients');

  constructor(
    @InjectRepository(OAuthClient) private readonly clients: Repository<OAuthClient>,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (!usesEmbeddedDispatcherClient(this.config)) return;
    const { clientId, clientSecret } = embeddedDispatcherCredential(this.config.secretKey);
    const existing = await this.clients.findOneBy({ id: clientId });
    const current = existing
      && existing.scopes.length === 1 && existing.scopes[0] === 'dispatchers:write'
      && (await verifyClientSecret(clientSecret, existing.secretHash));
    if (current) return;
    // An upsert: a twin of this process may be doing the same at the same time.
    await this.clients.upsert(
      { id: clientId, name: EMBEDDED_DISPATCHER_CLIENT_NAME, scopes: ['dispatchers:write'], secretHash: await hashClientSecret(clientSecret) },
      ['id'],
    );
    this.logger.log({ clientId }, `OAuth client "${EMBEDDED_DISPATCHER_CLIENT_NAME}" (dispatchers:write) ready for the embedded dispatcher`);
  }
}
