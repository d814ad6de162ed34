import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The task pipeline: a task is stored with its inline brief (written to object storage by
 * the dispatch loop, then cleared), pending tasks are claimed oldest first from a partial
 * index, and a dispatcher's open tasks are counted from an index rather than kept in a
 * counter.
 */
export class TaskPipeline1760000000000 implements MigrationInterface {
  name = 'TaskPipeline1760000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "controller"."tasks" ADD COLUMN "brief_pending" text`);
    await queryRunner.query(
      `CREATE INDEX "tasks_pending_arrival_idx" ON "controller"."tasks" ("created_at", "guid") WHERE "status" = 'pending'`,
    );
    await queryRunner.query(
      `CREATE INDEX "tasks_open_dispatcher_idx" ON "controller"."tasks" ("dispatcher_guid") WHERE "status" IN ('dispatched', 'running')`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "controller"."tasks_open_dispatcher_idx"`);
    await queryRunner.query(`DROP INDEX "controller"."tasks_pending_arrival_idx"`);
    await queryRunner.query(`ALTER TABLE "controller"."tasks" DROP COLUMN "brief_pending"`);
  }
}
