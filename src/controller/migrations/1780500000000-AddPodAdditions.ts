import { MigrationInterface, QueryRunner } from 'typeorm';

/** A task's own pod labels, annotations, node selector, tolerations and priority class, passed on to its dispatcher. */
export class AddPodAdditions1780500000000 implements MigrationInterface {
  name = 'AddPodAdditions1780500000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE "controller"."tasks" ADD COLUMN "pod_additions" jsonb NOT NULL DEFAULT '{}'`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE "controller"."tasks" DROP COLUMN "pod_additions"`);
  }
}
