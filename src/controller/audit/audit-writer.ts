import { BeforeApplicationShutdown, Injectable, Logger } from '@nestjs/common';
import { outsideTraces } from '../../shared/tracing/trace-context';
import { NewAuditEntry } from './audit-plan';
import { AuditRepository } from './audit.repository';

const MAX_BATCH = 500;

/**
 * Stores audit rows off the request's path, with group commit: a row waits only for the
 * write under way, and every row queued meanwhile goes in the next single INSERT. Under
 * load (task creation by orchestrators) a burst of rows costs one statement, and no
 * request waits for a round trip of its own. The queue is drained before the process
 * stops; a crash loses at most the rows of the last moments (see docs/audit.md).
 */
@Injectable()
export class AuditWriter implements BeforeApplicationShutdown {
  private readonly logger = new Logger('AuditTrail');
  private queue: NewAuditEntry[] = [];
  private writing: Promise<void> | null = null;

  constructor(private readonly entries: AuditRepository) {}

  add(entry: NewAuditEntry): void {
    this.queue.push(entry);
    // The batch serves every request queued meanwhile: it belongs to none of their traces.
    this.writing ??= outsideTraces(() => this.drain());
  }

  /** Resolves once every row added before the call is stored (or logged as lost). */
  async idle(): Promise<void> {
    while (this.writing) await this.writing;
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.idle();
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, MAX_BATCH);
        try {
          await this.entries.insertMany(batch);
        } catch (err) {
          // The changes themselves are done and answered; what is lost is named in the log.
          this.logger.error({ err, lost: batch.map((entry) => ({ ...entry, details: undefined })) }, `${batch.length} audit rows not stored`);
        }
      }
    } finally {
      this.writing = null;
    }
  }
}
