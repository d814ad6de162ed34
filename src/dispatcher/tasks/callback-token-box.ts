import { Inject, Injectable } from '@nestjs/common';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { deriveKey, seal, unseal } from '../auth/agent-keys';

/**
 * The callback token must be presented again on the callback, so it cannot be kept as a
 * hash: it is sealed (AES-256-GCM) with a key derived from AGENT_KEY.
 */
@Injectable()
export class CallbackTokenBox {
  private readonly key: Buffer;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.key = deriveKey(config.agentKey, 'callback-token');
  }

  seal(token: string): string {
    return seal(this.key, token);
  }

  open(sealed: string): string {
    return unseal(this.key, sealed);
  }
}
