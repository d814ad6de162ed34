import { MigrationInterface, QueryRunner } from 'typeorm';

/** Which replica claimed a task to start it, so a replica that starts again takes up its own unstarted claims at once. */
export class AddTaskClaimant1710000000101 implements MigrationInterface {
  name = 'AddTaskClaimant1710000000101';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE "dispatcher"."tasks" ADD COLUMN "claimed_by" text`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE "dispatcher"."tasks" DROP COLUMN "claimed_by"`);
  }
}
