import { DataSource, EntityManager } from 'typeorm';
import { onConnection } from './round-trips';

/**
 * Runs `work` in a transaction that holds the transaction-scoped advisory lock `lock` before
 * any of its statements, each of which then takes its snapshot after every transaction that
 * held the lock before. `START TRANSACTION` and the lock go to PostgreSQL in one round trip
 * (two statements of the simple protocol, whose text needs no parameter for a numeric lock),
 * where `DataSource.transaction` sends them one after the other. For work that is a few
 * statements with no code between them, `tripTransaction` sends them with the lock and COMMIT.
 */
export async function lockedTransaction<T>(db: DataSource, lock: number, work: (manager: EntityManager) => Promise<T>): Promise<T> {
  if (!Number.isSafeInteger(lock)) throw new Error(`an advisory lock is an integer, not ${lock}`);
  return onConnection(db, async (runner) => {
    await runner.query(`START TRANSACTION; SELECT pg_advisory_xact_lock(${lock})`);
    const result = await work(runner.manager);
    await runner.query('COMMIT');
    return result;
  });
}
