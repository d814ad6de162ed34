import { MigrationInterface, QueryRunner } from 'typeorm';
import { createIndexOnline, dropIndexOnline } from '../../shared/database/online-index';

/** `GET /tasks?status=` walks one index in the list's order, `(created_at, seq)` newest first. */
export class StatusListIndex1710000000004 implements MigrationInterface {
  name = 'StatusListIndex1710000000004';
  transaction = false;

  async up(runner: QueryRunner): Promise<void> {
    await createIndexOnline(runner, 'dispatcher', { name: 'tasks_status_created_seq', on: `ON "dispatcher"."tasks" ("status", "created_at", "seq")` });
    await dropIndexOnline(runner, 'dispatcher', 'tasks_status_created_at');
  }

  async down(runner: QueryRunner): Promise<void> {
    await createIndexOnline(runner, 'dispatcher', { name: 'tasks_status_created_at', on: `ON "dispatcher"."tasks" ("status", "created_at")` });
    await dropIndexOnline(runner, 'dispatcher', 'tasks_status_created_seq');
  }
}
