import { MigrationInterface, QueryRunner } from 'typeorm';

/** The ticks of workflow schedules that made a task: one row per (workflow, tick time), whichever replica got there first. */
export class CreateScheduleTicks1790300000000 implements MigrationInterface {
  name = 'CreateScheduleTicks1790300000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE "controller"."schedule_ticks" (
        "workflow_id" text NOT NULL,
        "tick_at" timestamptz NOT NULL,
        "task_guid" uuid NOT NULL,
        "created_at" timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT "schedule_ticks_pkey" PRIMARY KEY ("workflow_id", "tick_at"),
        CONSTRAINT "schedule_ticks_workflow_id_fkey" FOREIGN KEY ("workflow_id") REFERENCES "controller"."workflows" ("id") ON DELETE CASCADE
      )`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`DROP TABLE "controller"."schedule_ticks"`);
  }
}
