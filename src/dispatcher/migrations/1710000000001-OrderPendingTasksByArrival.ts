import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Pending tasks start in the order their `created_at` shows (the sequence breaks ties),
 * so the list and the start order agree even when concurrent inserts take their
 * sequence numbers in another order than their timestamps.
 */
export class OrderPendingTasksByArrival1710000000001 implements MigrationInterface {
  name = 'OrderPendingTasksByArrival1710000000001';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`DROP INDEX "dispatcher"."tasks_pending_seq"`);
    await runner.query(`CREATE INDEX "tasks_pending_arrival" ON "dispatcher"."tasks" ("created_at", "seq") WHERE "status" = 'pending'`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`DROP INDEX "dispatcher"."tasks_pending_arrival"`);
    await runner.query(`CREATE INDEX "tasks_pending_seq" ON "dispatcher"."tasks" ("seq") WHERE "status" = 'pending'`);
  }
}
