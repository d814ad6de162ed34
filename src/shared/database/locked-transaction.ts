import { DataSource, EntityManager } from 'typeorm';

/**
 * Runs `work` in a transaction that holds the transaction-scoped advisory lock `lock` before
 * any of its statements, each of which then takes its snapshot after every transaction that
 * held the lock before. `START TRANSACTION` and the lock go to PostgreSQL in one round trip
 * (two statements of the simple protocol, whose text needs no parameter for a numeric lock),
 * where `DataSource.transaction` sends them one after the other: the claims of both roles
 * start this way, once or more per task.
 */
export async function lockedTransaction<T>(db: DataSource, lock: number, work: (manager: EntityManager) => Promise<T>): Promise<T> {
  if (!Number.isSafeInteger(lock)) throw new Error(`an advisory lock is an integer, not ${lock}`);
  const runner = db.createQueryRunner();
  try {
    await runner.query(`START TRANSACTION; SELECT pg_advisory_xact_lock(${lock})`);
    const result = await work(runner.manager);
    await runner.query('COMMIT');
    return result;
  } catch (error) {
    // A connection that cannot roll back is not given back to the pool for another caller.
    const broken = await runner.query('ROLLBACK').then(() => undefined, (rollback: unknown) => rollback as Error);
    // (TypeORM's own release with an error, as its transactions use it; not in its typings.)
    await (runner as unknown as { releasePostgresConnection(error?: Error): Promise<void> }).releasePostgresConnection(broken);
    throw error;
  } finally {
    await runner.release();
  }
}
