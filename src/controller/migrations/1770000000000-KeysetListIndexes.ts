import { MigrationInterface, QueryRunner } from 'typeorm';
import { createIndexOnline, dropIndexOnline, OnlineIndex } from '../../shared/database/online-index';

const BUILT: OnlineIndex[] = [
  { name: 'tasks_created_idx', on: `ON "controller"."tasks" ("created_at", "guid")` },
  { name: 'tasks_status_created_idx', on: `ON "controller"."tasks" ("status", "created_at", "guid")` },
  { name: 'tasks_workflow_created_idx', on: `ON "controller"."tasks" ("workflow_id", "created_at", "guid")` },
  { name: 'webhook_deliveries_received_id_idx', on: `ON "controller"."webhook_deliveries" ("received_at", "id")` },
  // Partial: the flood of ignored deliveries (no workflow, outcome ignored) never writes these two.
  {
    name: 'webhook_deliveries_workflow_received_idx',
    on: `ON "controller"."webhook_deliveries" ("workflow_id", "received_at", "id") WHERE "workflow_id" IS NOT NULL`,
  },
  {
    name: 'webhook_deliveries_outcome_received_idx',
    on: `ON "controller"."webhook_deliveries" ("outcome", "received_at", "id") WHERE "outcome" <> 'ignored'`,
  },
];

/** Replaced: each is the first column of one built above. */
const DROPPED = ['tasks_created_at_idx', 'tasks_status_idx', 'tasks_workflow_idx', 'webhook_deliveries_received_idx', 'webhook_deliveries_workflow_idx'];

/**
 * Lists page by key, newest first: each filter of `/tasks/`, `/workflows/{id}/runs/` and
 * `/webhooks/deliveries/` gets an index in the list's order, so a page is an index walk of
 * its own length at any depth (the ledger's `?source=`, `?event=` and `?outcome=ignored`
 * walk the time index: each matches a large share of a busy ledger, and an index per
 * filter would tax every delivery's insert). Built concurrently: writes go on while it runs.
 */
export class KeysetListIndexes1770000000000 implements MigrationInterface {
  name = 'KeysetListIndexes1770000000000';
  transaction = false;

  async up(runner: QueryRunner): Promise<void> {
    for (const index of BUILT) await createIndexOnline(runner, 'controller', index);
    for (const name of DROPPED) await dropIndexOnline(runner, 'controller', name);
  }

  async down(runner: QueryRunner): Promise<void> {
    await createIndexOnline(runner, 'controller', { name: 'tasks_created_at_idx', on: `ON "controller"."tasks" ("created_at")` });
    await createIndexOnline(runner, 'controller', { name: 'tasks_status_idx', on: `ON "controller"."tasks" ("status")` });
    await createIndexOnline(runner, 'controller', { name: 'tasks_workflow_idx', on: `ON "controller"."tasks" ("workflow_id")` });
    await createIndexOnline(runner, 'controller', { name: 'webhook_deliveries_received_idx', on: `ON "controller"."webhook_deliveries" ("received_at")` });
    await createIndexOnline(runner, 'controller', { name: 'webhook_deliveries_workflow_idx', on: `ON "controller"."webhook_deliveries" ("workflow_id")` });
    for (const index of BUILT) await dropIndexOnline(runner, 'controller', index.name);
  }
}
