import { MigrationInterface, QueryRunner } from 'typeorm';
import { createIndexOnline, dropIndexOnline } from '../../shared/database/online-index';

/** The retention sweep finds final tasks by when they ended, oldest first, from an index. */
export class RetentionIndexes1770000000001 implements MigrationInterface {
  name = 'RetentionIndexes1770000000001';
  transaction = false;

  async up(runner: QueryRunner): Promise<void> {
    await createIndexOnline(runner, 'controller', { name: 'tasks_finished_idx', on: `ON "controller"."tasks" ("finished_at") WHERE "finished_at" IS NOT NULL` });
  }

  async down(runner: QueryRunner): Promise<void> {
    await dropIndexOnline(runner, 'controller', 'tasks_finished_idx');
  }
}
