import { randomUUID } from 'node:crypto';
import { Global, Inject, Injectable, Logger, Module, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Response } from 'express';
import { DataSource } from 'typeorm';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { DomainError } from '../../shared/errors/domain-error';

/** How long a refused client is told to wait before it tries again. */
const RETRY_AFTER_SECONDS = 10;

/**
 * A caller's open event streams and log follows counted across every controller replica
 * (STREAMS_PER_PRINCIPAL): one lease row per open stream, taken in one statement under a
 * lock on the caller, so two replicas cannot both hand out the last one. A replica renews the
 * leases of its own streams; those of a replica that died expire after
 * STREAM_LEASE_SECONDS and stop counting. A lease is given back when its response closes,
 * however it ends.
 */
@Injectable()
export class StreamLeases implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('StreamLeases');
  private readonly replicaId = randomUUID();
  private readonly held = new Set<string>();
  /** Takes waiting for the one running for the same caller, and the callers with one running. */
  private readonly waiting = new Map<string, { resolve: (id: string | null) => void; reject: (error: unknown) => void }[]>();
  private readonly taking = new Set<string>();
  private renewal: NodeJS.Timeout | undefined;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    // Renewed three times per lease, so one missed renewal (a slow database) loses nothing.
    this.renewal = setInterval(() => void this.renew(), (this.config.streamLeaseSeconds * 1000) / 3);
    this.renewal.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.renewal);
    if (this.held.size === 0) return;
    await this.db.query(`DELETE FROM "controller"."stream_leases" WHERE replica_id = $1`, [this.replicaId]).catch(() => undefined);
    this.held.clear();
  }

  /** Takes a lease for `principal` until `response` closes; beyond the cap a 429 with Retry-After. */
  async take(principal: string, response: Response): Promise<void> {
    let closed = false;
    let leaseId: string | null = null;
    response.once('close', () => {
      closed = true;
      if (leaseId) this.release(leaseId);
    });
    leaseId = await this.insert(principal);
    if (!leaseId) {
      throw new DomainError('throttled', `A caller may hold ${this.config.streamsPerPrincipal} streams open across all replicas (STREAMS_PER_PRINCIPAL).`, {
        headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) },
      });
    }
    this.held.add(leaseId);
    if (closed) this.release(leaseId);
  }

  /**
   * A lease from `controller.take_stream_lease`, which counts the caller's live leases and
   * inserts one below the cap under an advisory lock on the caller held for that call only,
   * so two replicas never both hand out the last lease. Takes of one caller that arrive
   * while one is running wait and go together in the next statement (one call per lease,
   * each seeing the ones before it), so a burst of a thousand streams costs a few
   * statements, not a thousand queued for the pool.
   */
  private insert(principal: string): Promise<string | null> {
    return new Promise((resolve, reject) => {
      const queue = this.waiting.get(principal) ?? [];
      queue.push({ resolve, reject });
      this.waiting.set(principal, queue);
      if (!this.taking.has(principal)) void this.takeWaiting(principal);
    });
  }

  private async takeWaiting(principal: string): Promise<void> {
    this.taking.add(principal);
    try {
      for (let batch = this.waiting.get(principal); batch?.length; batch = this.waiting.get(principal)) {
        this.waiting.delete(principal);
        try {
          const rows = (await this.db.query(`SELECT "controller"."take_stream_lease"($1, $2, $3, $4) AS id FROM generate_series(1, $5)`, [
            principal,
            this.replicaId,
            this.config.streamLeaseSeconds,
            this.config.streamsPerPrincipal,
            batch.length,
          ])) as { id: string | null }[];
          batch.forEach((waiter, index) => waiter.resolve(rows[index]?.id ?? null));
        } catch (error) {
          for (const waiter of batch) waiter.reject(error);
        }
      }
    } finally {
      this.taking.delete(principal);
    }
  }

  private release(leaseId: string): void {
    if (!this.held.delete(leaseId)) return;
    this.db.query(`DELETE FROM "controller"."stream_leases" WHERE id = $1`, [leaseId]).catch((error: unknown) => {
      // The row expires by itself when it is no longer renewed.
      this.logger.warn({ err: error }, 'Could not give back a stream lease; it expires within STREAM_LEASE_SECONDS');
    });
  }

  /** Extends this replica's leases and sweeps expired ones (of every replica); no query while it holds none. */
  private async renew(): Promise<void> {
    if (this.held.size === 0) return;
    try {
      await this.db.query(`UPDATE "controller"."stream_leases" SET expires_at = now() + make_interval(secs => $2) WHERE replica_id = $1`, [
        this.replicaId,
        this.config.streamLeaseSeconds,
      ]);
      await this.db.query(`DELETE FROM "controller"."stream_leases" WHERE expires_at <= now()`);
    } catch (error) {
      this.logger.warn({ err: error }, 'Could not renew stream leases');
    }
  }
}

/** One StreamLeases per controller replica, for every controller feature that streams. */
@Global()
@Module({ providers: [StreamLeases], exports: [StreamLeases] })
export class StreamLeasesModule {}
