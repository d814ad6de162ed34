import { MigrationInterface, QueryRunner } from 'typeorm';

/** The W3C trace context of the request that stored a task, so its later steps join that trace. */
export class AddTraceContext1790900000000 implements MigrationInterface {
  name = 'AddTraceContext1790900000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE "controller"."tasks" ADD COLUMN "trace_parent" text, ADD COLUMN "trace_state" text`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE "controller"."tasks" DROP COLUMN "trace_parent", DROP COLUMN "trace_state"`);
  }
}
