import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Retries, dead letters and re-runs: a task's retry policy (null: the default one), its current attempt and the
 * dispatcher task id that attempt was sent under, whether it gave up (dead letter), the task
 * it re-runs, and one row per ended earlier attempt (with the hash of that attempt's callback
 * token, so its late callbacks are recognised and refused). A workflow keeps the policy its
 * tasks get.
 */
export class TaskRetries1790200000000 implements MigrationInterface {
  name = 'TaskRetries1790200000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE "controller"."tasks"
      ADD COLUMN "retry" jsonb,
      ADD COLUMN "attempt" integer NOT NULL DEFAULT 1,
      ADD COLUMN "dispatcher_task_id" uuid,
      ADD COLUMN "dead_letter" boolean NOT NULL DEFAULT false,
      ADD COLUMN "rerun_of" uuid,
      ADD CONSTRAINT "tasks_rerun_of_fkey" FOREIGN KEY ("rerun_of") REFERENCES "controller"."tasks" ("guid") ON DELETE SET NULL`);
    await runner.query(`CREATE INDEX "tasks_dead_letter_idx" ON "controller"."tasks" ("created_at", "guid") WHERE "dead_letter"`);
    await runner.query(`CREATE INDEX "tasks_rerun_of_idx" ON "controller"."tasks" ("rerun_of") WHERE "rerun_of" IS NOT NULL`);
    await runner.query(`CREATE TABLE "controller"."task_attempts" (
      "task_guid" uuid NOT NULL,
      "attempt" integer NOT NULL,
      "dispatcher_guid" uuid,
      "dispatcher_slug" text,
      "dispatcher_task_id" uuid NOT NULL,
      "callback_token_hash" text,
      "status" text NOT NULL,
      "reason" text NOT NULL,
      "error_message" text,
      "started_at" timestamptz,
      "finished_at" timestamptz NOT NULL DEFAULT now(),
      CONSTRAINT "task_attempts_pkey" PRIMARY KEY ("task_guid", "attempt"),
      CONSTRAINT "task_attempts_task_guid_fkey" FOREIGN KEY ("task_guid") REFERENCES "controller"."tasks" ("guid") ON DELETE CASCADE)`);
    await runner.query(`ALTER TABLE "controller"."workflows" ADD COLUMN "retry" jsonb`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE "controller"."workflows" DROP COLUMN "retry"`);
    await runner.query(`DROP TABLE "controller"."task_attempts"`);
    await runner.query(`DROP INDEX "controller"."tasks_rerun_of_idx"`);
    await runner.query(`DROP INDEX "controller"."tasks_dead_letter_idx"`);
    await runner.query(`ALTER TABLE "controller"."tasks" DROP CONSTRAINT "tasks_rerun_of_fkey",
      DROP COLUMN "rerun_of", DROP COLUMN "dead_letter", DROP COLUMN "dispatcher_task_id", DROP COLUMN "attempt", DROP COLUMN "retry"`);
  }
}
