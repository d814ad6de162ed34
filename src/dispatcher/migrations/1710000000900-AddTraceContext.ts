import { MigrationInterface, QueryRunner } from 'typeorm';

/** The W3C trace context of the controller's request that created a task: its start, agent and callback join that trace. */
export class AddTraceContext1710000000900 implements MigrationInterface {
  name = 'AddTraceContext1710000000900';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE "dispatcher"."tasks" ADD COLUMN "trace_parent" text, ADD COLUMN "trace_state" text`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE "dispatcher"."tasks" DROP COLUMN "trace_parent", DROP COLUMN "trace_state"`);
  }
}
