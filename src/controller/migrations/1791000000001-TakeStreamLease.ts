import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Takes a stream lease in one statement: the caller's live leases counted and one inserted
 * below the cap under an advisory lock on the caller, held for the server's few
 * microseconds only, never across round trips to a replica (a burst of streams from one
 * caller would otherwise hold every pooled connection waiting on the lock).
 */
export class TakeStreamLease1791000000001 implements MigrationInterface {
  name = 'TakeStreamLease1791000000001';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`CREATE FUNCTION "controller"."take_stream_lease"(p_principal text, p_replica uuid, p_seconds int, p_cap int) RETURNS uuid
      LANGUAGE plpgsql AS $$
      DECLARE lease uuid;
      BEGIN
        PERFORM pg_advisory_xact_lock(hashtextextended('stream-leases:' || p_principal, 0));
        IF (SELECT count(*) FROM "controller"."stream_leases" WHERE principal = p_principal AND expires_at > now()) >= p_cap THEN
          RETURN NULL;
        END IF;
        INSERT INTO "controller"."stream_leases" (principal, replica_id, expires_at)
          VALUES (p_principal, p_replica, now() + make_interval(secs => p_seconds)) RETURNING id INTO lease;
        RETURN lease;
      END $$`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`DROP FUNCTION "controller"."take_stream_lease"(text, uuid, int, int)`);
  }
}
