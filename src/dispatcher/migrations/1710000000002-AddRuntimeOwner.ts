import { MigrationInterface, QueryRunner } from 'typeorm';

/** Which replica submitted a task's agent, so replicas leave each other's host-local agents alone. */
export class AddRuntimeOwner1710000000002 implements MigrationInterface {
  name = 'AddRuntimeOwner1710000000002';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE "dispatcher"."tasks" ADD COLUMN "runtime_owner" text`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE "dispatcher"."tasks" DROP COLUMN "runtime_owner"`);
  }
}
