import { MigrationInterface, QueryRunner } from 'typeorm';

/** Each dispatcher's warm pools as its last heartbeat reported them (size, idle, claimed), for the console. */
export class AddDispatcherWarmPools1791100002600 implements MigrationInterface {
  name = 'AddDispatcherWarmPools1791100002600';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE "controller"."dispatchers" ADD COLUMN "warm_pools" jsonb NOT NULL DEFAULT '[]'::jsonb`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE "controller"."dispatchers" DROP COLUMN "warm_pools"`);
  }
}
