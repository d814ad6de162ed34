import { MigrationInterface, QueryRunner } from 'typeorm';

/** A task's own pod labels, annotations, node selector, tolerations and priority class. */
export class AddPodAdditions1710000000500 implements MigrationInterface {
  name = 'AddPodAdditions1710000000500';

  async up(runner: QueryRunner): Promise<void> {
    // A constant default: no table rewrite, and older rows read as "nothing added".
    await runner.query(`ALTER TABLE "dispatcher"."tasks" ADD COLUMN "pod_additions" jsonb NOT NULL DEFAULT '{}'`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE "dispatcher"."tasks" DROP COLUMN "pod_additions"`);
  }
}
