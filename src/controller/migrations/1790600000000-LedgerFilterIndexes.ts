import { MigrationInterface, QueryRunner } from 'typeorm';
import { createIndexOnline, dropIndexOnline } from '../../shared/database/online-index';

const OUTCOME_PARTIAL = `ON "controller"."webhook_deliveries" ("outcome", "received_at", "id") WHERE "outcome" <> 'ignored'`;

/**
 * The ledger's `?source=`, `?event=` and `?outcome=` (`ignored` included) each get an index
 * in the list's order, as `?workflow=` has: walking the time index and filtering is quick
 * only while matches are spread through the table, and takes a scan of most of it when the
 * matching rows are few or all old (one sender's, one event's, a burst of ignored ones).
 * Each costs one index entry per delivery stored.
 */
export class LedgerFilterIndexes1790600000000 implements MigrationInterface {
  name = 'LedgerFilterIndexes1790600000000';
  transaction = false;

  async up(runner: QueryRunner): Promise<void> {
    await createIndexOnline(runner, 'controller', { name: 'webhook_deliveries_source_received_idx', on: `ON "controller"."webhook_deliveries" ("source", "received_at", "id")` });
    await createIndexOnline(runner, 'controller', { name: 'webhook_deliveries_event_received_idx', on: `ON "controller"."webhook_deliveries" ("event", "received_at", "id")` });
    await createIndexOnline(runner, 'controller', { name: 'webhook_deliveries_outcome_all_received_idx', on: `ON "controller"."webhook_deliveries" ("outcome", "received_at", "id")` });
    await dropIndexOnline(runner, 'controller', 'webhook_deliveries_outcome_received_idx');
  }

  async down(runner: QueryRunner): Promise<void> {
    await createIndexOnline(runner, 'controller', { name: 'webhook_deliveries_outcome_received_idx', on: OUTCOME_PARTIAL });
    for (const name of ['webhook_deliveries_outcome_all_received_idx', 'webhook_deliveries_event_received_idx', 'webhook_deliveries_source_received_idx']) {
      await dropIndexOnline(runner, 'controller', name);
    }
  }
}
