import { Global, Inject, Injectable, Module } from '@nestjs/common';
import type { Response } from 'express';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { DomainError } from '../errors/domain-error';

/** How long a refused client is told to wait before it tries again. */
const RETRY_AFTER_SECONDS = 10;

/**
 * The open event streams and log follows of this replica, counted in all and per principal
 * (STREAMS_PER_REPLICA, STREAMS_PER_PRINCIPAL): one more is a 429 with Retry-After, so a
 * client cannot hold a replica's sockets, memory and database reads with streams. A slot is
 * given back when its response closes, however it ends.
 */
@Injectable()
export class StreamSlots {
  private total = 0;
  private readonly perPrincipal = new Map<string, number>();

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  get open(): number {
    return this.total;
  }

  /** Takes a slot for `principal` (null: count toward the replica's cap only) until `response` closes. */
  take(principal: string | null, response: Response): void {
    const held = principal === null ? 0 : (this.perPrincipal.get(principal) ?? 0);
    if (this.total >= this.config.streamsPerReplica) throw refusal(`This replica serves ${this.config.streamsPerReplica} streams at most (STREAMS_PER_REPLICA).`);
    if (principal !== null && held >= this.config.streamsPerPrincipal) {
      throw refusal(`A caller may hold ${this.config.streamsPerPrincipal} streams open on one replica (STREAMS_PER_PRINCIPAL).`);
    }
    this.total += 1;
    if (principal !== null) this.perPrincipal.set(principal, held + 1);
    response.once('close', () => {
      this.total -= 1;
      if (principal === null) return;
      const left = (this.perPrincipal.get(principal) ?? 1) - 1;
      if (left > 0) this.perPrincipal.set(principal, left);
      else this.perPrincipal.delete(principal);
    });
  }
}

function refusal(message: string): DomainError {
  return new DomainError('throttled', message, { headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) } });
}

/** One StreamSlots per role application, for every feature that streams. */
@Global()
@Module({ providers: [StreamSlots], exports: [StreamSlots] })
export class StreamSlotsModule {}
