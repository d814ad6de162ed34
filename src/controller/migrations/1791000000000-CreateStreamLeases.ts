import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * One row per open event stream or log follow, whichever replica serves it, so
 * STREAMS_PER_PRINCIPAL counts a caller's streams across every replica. A row expires
 * unless its replica renews it: a replica that is killed leaves rows that stop counting
 * within STREAM_LEASE_SECONDS.
 */
export class CreateStreamLeases1791000000000 implements MigrationInterface {
  name = 'CreateStreamLeases1791000000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`CREATE TABLE "controller"."stream_leases" (
      "id" uuid NOT NULL DEFAULT gen_random_uuid(),
      "principal" text NOT NULL,
      "replica_id" uuid NOT NULL,
      "expires_at" timestamptz NOT NULL,
      "created_at" timestamptz NOT NULL DEFAULT now(),
      CONSTRAINT "stream_leases_pkey" PRIMARY KEY ("id"))`);
    await runner.query(`CREATE INDEX "stream_leases_principal" ON "controller"."stream_leases" ("principal", "expires_at")`);
    await runner.query(`CREATE INDEX "stream_leases_replica" ON "controller"."stream_leases" ("replica_id")`);
    await runner.query(`CREATE INDEX "stream_leases_expires_at" ON "controller"."stream_leases" ("expires_at")`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`DROP TABLE "controller"."stream_leases"`);
  }
}
