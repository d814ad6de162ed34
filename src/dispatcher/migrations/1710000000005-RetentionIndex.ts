import { MigrationInterface, QueryRunner } from 'typeorm';
import { createIndexOnline, dropIndexOnline } from '../../shared/database/online-index';

/** The retention sweep finds final tasks by when they ended, oldest first, from an index. */
export class RetentionIndex1710000000005 implements MigrationInterface {
  name = 'RetentionIndex1710000000005';
  transaction = false;

  async up(runner: QueryRunner): Promise<void> {
    await createIndexOnline(runner, 'dispatcher', { name: 'tasks_finished_at', on: `ON "dispatcher"."tasks" ("finished_at") WHERE "finished_at" IS NOT NULL` });
  }

  async down(runner: QueryRunner): Promise<void> {
    await dropIndexOnline(runner, 'dispatcher', 'tasks_finished_at');
  }
}
