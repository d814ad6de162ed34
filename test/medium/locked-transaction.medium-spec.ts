import { DataSource } from 'typeorm';
import { lockedTransaction } from '../../src/shared/database/locked-transaction';
import { sentStatements } from '../harness/pg-statements';
import { controllerDatabase } from './controller-tasks';

const LOCK = 424_242;

/** A transaction under an advisory lock whose BEGIN and lock are one round trip (both roles' claims). */
describe('lockedTransaction', () => {
  let sources: DataSource[];
  let close: () => Promise<void>;

  beforeAll(async () => {
    // Two replicas of one connection each: a connection not given back would stall the next call.
    ({ sources, close } = await controllerDatabase(2, 1));
    await sources[0].query('CREATE TABLE IF NOT EXISTS public.locked_spec (n int)');
  });
  afterAll(async () => {
    await sources[0].query('DROP TABLE IF EXISTS public.locked_spec');
    await close();
  });

  it('sends BEGIN and the lock as one query, then the work, then COMMIT', async () => {
    const sent = sentStatements();
    try {
      expect(await lockedTransaction(sources[0], LOCK, (manager) => manager.query('SELECT 41 + 1 AS n'))).toEqual([{ n: 42 }]);
    } finally {
      sent.stop();
    }
    expect(sent.texts).toEqual([`START TRANSACTION; SELECT pg_advisory_xact_lock(${LOCK})`, 'SELECT 41 + 1 AS n', 'COMMIT']);
  });

  it('makes a second replica wait for the lock, and its statements see what the first committed', async () => {
    let release!: () => void;
    const holding = new Promise<void>((resolve) => (release = resolve));
    let first!: () => void;
    const firstHasLock = new Promise<void>((resolve) => (first = resolve));
    const one = lockedTransaction(sources[0], LOCK, async (manager) => {
      first();
      await holding;
      await manager.query('INSERT INTO public.locked_spec VALUES (1)');
    });
    await firstHasLock;
    const two = lockedTransaction(sources[1], LOCK, (manager) => manager.query('SELECT count(*)::int AS n FROM public.locked_spec'));
    const early = await Promise.race([two.then(() => 'answered'), new Promise((resolve) => setTimeout(() => resolve('waiting'), 300))]);
    expect(early).toBe('waiting');
    release();
    await one;
    expect(await two).toEqual([{ n: 1 }]);
  });

  it('rolls back and releases the lock and the connection when the work fails', async () => {
    await expect(lockedTransaction(sources[0], LOCK, async (manager) => {
      await manager.query('INSERT INTO public.locked_spec VALUES (2)');
      throw new Error('refused');
    })).rejects.toThrow('refused');
    await expect(lockedTransaction(sources[0], LOCK, (manager) => manager.query('SELECT 1 AS n FROM public.locked_spec WHERE n = 2'))).resolves.toEqual([]);
    // The other replica takes the lock at once: it was let go with the rollback.
    expect(await sources[1].query('SELECT pg_try_advisory_lock($1) AS ok', [LOCK])).toEqual([{ ok: true }]);
    await sources[1].query('SELECT pg_advisory_unlock($1)', [LOCK]);
  });

  it('refuses a lock that is not an integer, before it opens anything', async () => {
    await expect(lockedTransaction(sources[0], 1.5, async () => 1)).rejects.toThrow('integer');
    await expect(lockedTransaction(sources[0], LOCK, async () => 1)).resolves.toBe(1);
  });
});
