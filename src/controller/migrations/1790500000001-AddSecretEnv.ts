import { MigrationInterface, QueryRunner } from 'typeorm';

/** A task's `secret_env`: variable names to `<secret>/<key>` references, passed on to its dispatcher (never the values). */
export class AddSecretEnv1790500000001 implements MigrationInterface {
  name = 'AddSecretEnv1790500000001';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE "controller"."tasks" ADD COLUMN "secret_env" jsonb NOT NULL DEFAULT '{}'`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE "controller"."tasks" DROP COLUMN "secret_env"`);
  }
}
