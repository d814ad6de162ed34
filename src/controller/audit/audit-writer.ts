import { BeforeApplicationShutdown, Injectable, Logger } from '@nestjs/common';
import { GroupCommit } from '../../shared/database/group-commit';
import { NewAuditEntry } from './audit-plan';
import { AuditRepository } from './audit.repository';

const MAX_BATCH = 500;

/**
 * Stores audit rows off the request's path, with group commit (`GroupCommit`, one write at a
 * time): a row waits only for the write under way, and every row queued meanwhile goes in the
 * next single INSERT. Under load (task creation by orchestrators) a burst of rows costs one
 * statement, and no request waits for a round trip of its own. The queue is drained before
 * the process stops; a crash loses at most the rows of the last moments (see docs/audit.md).
 */
@Injectable()
export class AuditWriter implements BeforeApplicationShutdown {
  private readonly logger = new Logger('AuditTrail');
  private readonly rows: GroupCommit<NewAuditEntry, undefined>;

  constructor(entries: AuditRepository) {
    this.rows = new GroupCommit(async (batch) => {
      await entries.insertMany(batch);
      return batch.map(() => undefined);
    }, { maxBatch: MAX_BATCH, maxInFlight: 1 });
  }

  add(entry: NewAuditEntry): void {
    this.rows.add(entry).catch((err: unknown) => {
      // The change itself is done and answered; what is lost is named in the log.
      this.logger.error({ err, lost: { ...entry, details: undefined } }, 'An audit row was not stored');
    });
  }

  /** Resolves once every row added before the call is stored (or logged as lost). */
  idle(): Promise<void> {
    return this.rows.idle();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.idle();
  }
}
