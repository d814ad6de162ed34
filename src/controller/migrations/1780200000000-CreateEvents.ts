import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The event log `GET /api/v1/events/` streams and resumes from: one row per task creation,
 * status change, progress report and dispatcher state change, written by the same statement
 * as the change. `dispatchers.reported_state` is the state last announced, so exactly one
 * replica announces each change.
 */
export class CreateEvents1780200000000 implements MigrationInterface {
  name = 'CreateEvents1780200000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`CREATE TABLE "controller"."events" (
      "id" bigserial NOT NULL,
      "kind" text NOT NULL,
      "task_guid" uuid,
      "data" jsonb NOT NULL,
      "created_at" timestamptz NOT NULL DEFAULT now(),
      CONSTRAINT "events_pkey" PRIMARY KEY ("id"))`);
    await runner.query(`CREATE INDEX "events_created_idx" ON "controller"."events" ("created_at")`);
    await runner.query(`ALTER TABLE "controller"."dispatchers" ADD COLUMN "reported_state" text NOT NULL DEFAULT 'offline'`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE "controller"."dispatchers" DROP COLUMN "reported_state"`);
    await runner.query(`DROP TABLE "controller"."events"`);
  }
}
