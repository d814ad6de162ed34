import { Global, Inject, Injectable, Module } from '@nestjs/common';
import type { Response } from 'express';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { DomainError } from '../errors/domain-error';

/** How long a refused client is told to wait before it tries again. */
const RETRY_AFTER_SECONDS = 10;

/**
 * The open event streams and log follows of this replica (STREAMS_PER_REPLICA): one more
 * is a 429 with Retry-After, so clients cannot hold a replica's sockets, memory and
 * database reads with streams. A slot is given back when its response closes, however it
 * ends. A caller's own cap (STREAMS_PER_PRINCIPAL) is counted across replicas by the
 * controller's StreamLeases.
 */
@Injectable()
export class StreamSlots {
  private total = 0;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  get open(): number {
    return this.total;
  }

  /** Takes a slot until `response` closes. */
  take(response: Response): void {
    if (this.total >= this.config.streamsPerReplica) throw refusal(`This replica serves ${this.config.streamsPerReplica} streams at most (STREAMS_PER_REPLICA).`);
    this.total += 1;
    response.once('close', () => {
      this.total -= 1;
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
