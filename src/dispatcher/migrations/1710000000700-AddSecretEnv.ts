import { MigrationInterface, QueryRunner } from 'typeorm';

/** A task's `secret_env`: variable names to `<secret>/<key>` references (never the values). */
export class AddSecretEnv1710000000700 implements MigrationInterface {
  name = 'AddSecretEnv1710000000700';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE "dispatcher"."tasks" ADD COLUMN "secret_env" jsonb NOT NULL DEFAULT '{}'`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE "dispatcher"."tasks" DROP COLUMN "secret_env"`);
  }
}
