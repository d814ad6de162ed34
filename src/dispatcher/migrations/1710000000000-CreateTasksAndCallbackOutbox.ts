import { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateTasksAndCallbackOutbox1710000000000 implements MigrationInterface {
  name = 'CreateTasksAndCallbackOutbox1710000000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE "dispatcher"."tasks" (
        "task_id" uuid PRIMARY KEY,
        "seq" bigserial NOT NULL,
        "agent_image" text NOT NULL,
        "runtime_type" text NOT NULL,
        "runtime_namespace" text NOT NULL DEFAULT '',
        "resources" jsonb NOT NULL,
        "env" jsonb NOT NULL,
        "ports" jsonb NOT NULL,
        "brief_key" text NOT NULL DEFAULT '',
        "callback_url" text NOT NULL,
        "callback_token_sealed" text NOT NULL,
        "timeout_seconds" integer NOT NULL CHECK ("timeout_seconds" BETWEEN 1 AND 86400),
        "request_digest" text NOT NULL,
        "status" text NOT NULL DEFAULT 'pending'
          CHECK ("status" IN ('pending', 'starting', 'running', 'completed', 'failed', 'timed_out', 'cancelled')),
        "created_at" timestamptz NOT NULL DEFAULT now(),
        "started_at" timestamptz,
        "deadline_at" timestamptz,
        "finished_at" timestamptz,
        "exit_code" integer,
        "result_key" text,
        "result_metadata" jsonb,
        "error_message" text,
        "progress_percentage" integer,
        "progress_message" text,
        "progress_data" jsonb,
        "progress_updated_at" timestamptz,
        "runtime_backend" text,
        "runtime_ref" text
      )`);
    await runner.query(`CREATE INDEX "tasks_pending_seq" ON "dispatcher"."tasks" ("seq") WHERE "status" = 'pending'`);
    await runner.query(`CREATE INDEX "tasks_active_deadline" ON "dispatcher"."tasks" ("deadline_at") WHERE "status" IN ('starting', 'running')`);
    await runner.query(`CREATE INDEX "tasks_created_at" ON "dispatcher"."tasks" ("created_at" DESC, "seq" DESC)`);
    await runner.query(`CREATE INDEX "tasks_status_created_at" ON "dispatcher"."tasks" ("status", "created_at" DESC)`);
    await runner.query(`
      CREATE TABLE "dispatcher"."callback_outbox" (
        "id" uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        "task_id" uuid NOT NULL UNIQUE REFERENCES "dispatcher"."tasks" ("task_id") ON DELETE CASCADE,
        "body" text NOT NULL,
        "state" text NOT NULL DEFAULT 'pending' CHECK ("state" IN ('pending', 'delivered', 'failed')),
        "attempts" integer NOT NULL DEFAULT 0,
        "next_attempt_at" timestamptz NOT NULL DEFAULT now(),
        "last_error" text,
        "created_at" timestamptz NOT NULL DEFAULT now(),
        "delivered_at" timestamptz
      )`);
    await runner.query(`CREATE INDEX "callback_outbox_due" ON "dispatcher"."callback_outbox" ("next_attempt_at") WHERE "state" = 'pending'`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`DROP TABLE "dispatcher"."callback_outbox"`);
    await runner.query(`DROP TABLE "dispatcher"."tasks"`);
  }
}
