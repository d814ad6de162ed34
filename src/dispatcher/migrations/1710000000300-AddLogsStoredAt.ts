import { MigrationInterface, QueryRunner } from 'typeorm';

/** When a final task's output was stored at `logs/<task_id>.txt`; its callback waits for it. */
export class AddLogsStoredAt1710000000300 implements MigrationInterface {
  name = 'AddLogsStoredAt1710000000300';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE "dispatcher"."tasks" ADD COLUMN "logs_stored_at" timestamptz`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE "dispatcher"."tasks" DROP COLUMN "logs_stored_at"`);
  }
}
