import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The principal a dispatcher is bound to (`client:<id>` or `operator`): a check-in under its
 * name by anyone else is refused until an operator re-binds it. Rows from before stay unbound
 * (null) and are bound by their next check-in.
 */
export class DispatcherBinding1790500000000 implements MigrationInterface {
  name = 'DispatcherBinding1790500000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE "controller"."dispatchers" ADD COLUMN "bound_to" text`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE "controller"."dispatchers" DROP COLUMN "bound_to"`);
  }
}
