import { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateTasks1730500000001 implements MigrationInterface {
  name = 'CreateTasks1730500000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE "controller"."tasks" (
        "guid" uuid PRIMARY KEY,
        "status" text NOT NULL DEFAULT 'pending'
          CHECK ("status" IN ('pending', 'dispatched', 'running', 'completed', 'failed', 'timed_out', 'cancelled')),
        "agent_image" text NOT NULL,
        "runtime_target" jsonb NOT NULL,
        "resources" jsonb NOT NULL,
        "env" jsonb NOT NULL DEFAULT '{}',
        "ports" jsonb NOT NULL DEFAULT '[]',
        "skills" jsonb NOT NULL DEFAULT '[]',
        "timeout_seconds" integer NOT NULL,
        "brief_key" text NOT NULL,
        "dispatcher_labels" jsonb NOT NULL DEFAULT '{}',
        "requested_dispatcher" text,
        "dispatcher_guid" uuid REFERENCES "controller"."dispatchers" ("guid") ON DELETE SET NULL,
        "dispatcher_slug" text,
        "callback_token_hash" text,
        "workflow_id" text,
        "delivery_id" text,
        "created_by" text,
        "dispatch_attempts" integer NOT NULL DEFAULT 0,
        "last_dispatch_error" text,
        "dispatch_claimed_until" timestamptz,
        "next_dispatch_at" timestamptz,
        "cancel_requested_at" timestamptz,
        "progress" jsonb,
        "exit_code" integer,
        "result_key" text,
        "result_metadata" jsonb,
        "error_message" text,
        "created_at" timestamptz NOT NULL DEFAULT now(),
        "updated_at" timestamptz NOT NULL DEFAULT now(),
        "dispatched_at" timestamptz,
        "started_at" timestamptz,
        "finished_at" timestamptz,
        "deadline_at" timestamptz
      )`);
    await queryRunner.query(`CREATE INDEX "tasks_status_idx" ON "controller"."tasks" ("status")`);
    await queryRunner.query(`CREATE INDEX "tasks_workflow_idx" ON "controller"."tasks" ("workflow_id")`);
    await queryRunner.query(`CREATE INDEX "tasks_created_at_idx" ON "controller"."tasks" ("created_at" DESC)`);
    await queryRunner.query(
      `CREATE INDEX "tasks_open_deadline_idx" ON "controller"."tasks" ("deadline_at") WHERE "status" IN ('dispatched', 'running')`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "controller"."tasks"`);
  }
}
