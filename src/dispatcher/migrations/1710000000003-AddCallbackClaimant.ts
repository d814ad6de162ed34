import { MigrationInterface, QueryRunner } from 'typeorm';

/** Which replica is sending a callback, so one that restarts can send its interrupted ones at once. */
export class AddCallbackClaimant1710000000003 implements MigrationInterface {
  name = 'AddCallbackClaimant1710000000003';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE "dispatcher"."callback_outbox" ADD COLUMN "claimed_by" text`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE "dispatcher"."callback_outbox" DROP COLUMN "claimed_by"`);
  }
}
