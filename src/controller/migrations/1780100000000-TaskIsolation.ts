import { MigrationInterface, QueryRunner } from 'typeorm';

/** A task's runtime class, network egress and security relaxations, forwarded to its dispatcher. */
export class TaskIsolation1780100000000 implements MigrationInterface {
  name = 'TaskIsolation1780100000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE "controller"."tasks" ADD COLUMN "runtime_class" text, ADD COLUMN "network" jsonb, ADD COLUMN "security" jsonb`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE "controller"."tasks" DROP COLUMN "security", DROP COLUMN "network", DROP COLUMN "runtime_class"`);
  }
}
