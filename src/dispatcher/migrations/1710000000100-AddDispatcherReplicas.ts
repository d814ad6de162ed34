import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The dispatcher replicas and when each was last heard from, so the others can end the
 * host-local tasks of one that went silent.
 */
export class AddDispatcherReplicas1710000000100 implements MigrationInterface {
  name = 'AddDispatcherReplicas1710000000100';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`CREATE TABLE "dispatcher"."replicas" (
      "instance" text NOT NULL,
      "host_local_backends" text[] NOT NULL DEFAULT '{}',
      "started_at" timestamptz NOT NULL DEFAULT now(),
      "last_seen" timestamptz NOT NULL DEFAULT now(),
      CONSTRAINT "replicas_pkey" PRIMARY KEY ("instance"))`);
    await runner.query(`CREATE INDEX "tasks_runtime_owner_idx" ON "dispatcher"."tasks" ("runtime_owner") WHERE "status" IN ('starting', 'running')`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`DROP INDEX "dispatcher"."tasks_runtime_owner_idx"`);
    await runner.query(`DROP TABLE "dispatcher"."replicas"`);
  }
}
