import { MigrationInterface, QueryRunner } from 'typeorm';

/** Streams filtered to one task replay its events by (task_guid, id) instead of scanning every event after their cursor. */
export class EventsByTask1790500000002 implements MigrationInterface {
  name = 'EventsByTask1790500000002';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`CREATE INDEX "events_task_guid_id_idx" ON "controller"."events" ("task_guid", "id")`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`DROP INDEX "controller"."events_task_guid_id_idx"`);
  }
}
