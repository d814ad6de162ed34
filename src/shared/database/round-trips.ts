import { escapeLiteral, type PoolClient, type QueryResult } from 'pg';
import { prepareValue } from 'pg/lib/utils';
import type { DataSource, QueryRunner } from 'typeorm';

/** One statement: its text with `$1`, `$2`, ... and their values, as pg's `query(text, values)` takes them. */
export interface Statement {
  text: string;
  values?: unknown[];
}

/**
 * The statement's text with each `$n` replaced by its value as an SQL literal, for the simple
 * query protocol, which takes several statements in one message but no parameters. A value is
 * written as pg writes a parameter (`prepareValue`: arrays as array literals, dates, JSON) and
 * quoted by pg's `escapeLiteral`; the literal carries no type, so PostgreSQL infers it from where
 * it stands, as it does for the untyped parameters pg sends. `$n` inside a quoted string or
 * identifier is left alone; a dollar-quoted string is refused (none of ours has one).
 */
export function inlineParameters({ text, values = [] }: Statement): string {
  let out = '';
  let at = 0;
  while (at < text.length) {
    const char = text[at];
    if (char === "'" || char === '"') {
      const end = closingQuote(text, at);
      out += text.slice(at, end);
      at = end;
    } else if (char === '$') {
      const digits = /^\$(\d+)/.exec(text.slice(at));
      if (!digits || /[\w$]/.test(text[at - 1] ?? '')) throw new Error(`inlineParameters: a dollar-quoted string or a stray $ at ${at} of ${JSON.stringify(text.slice(0, 80))}`);
      const index = Number(digits[1]) - 1;
      if (index < 0 || index >= values.length) throw new Error(`inlineParameters: $${index + 1} has no value (${values.length} given)`);
      out += literalOf(values[index]);
      at += digits[0].length;
    } else {
      out += char;
      at += 1;
    }
  }
  return out;
}

/** The index just past the quote closing the one at `start` (a doubled quote is part of the text). */
function closingQuote(text: string, start: number): number {
  const quote = text[start];
  for (let at = start + 1; at < text.length; at++) {
    if (text[at] !== quote) continue;
    if (text[at + 1] === quote) {
      at += 1;
      continue;
    }
    return at + 1;
  }
  throw new Error(`inlineParameters: an unclosed ${quote} at ${start}`);
}

function literalOf(value: unknown): string {
  const prepared = prepareValue(value);
  if (prepared === null) return 'NULL';
  if (Buffer.isBuffer(prepared)) return `'\\x${prepared.toString('hex')}'`;
  return escapeLiteral(prepared);
}

/** Several statements as one simple-protocol query: one round trip; each one's result, in order. */
async function sendTogether(client: PoolClient, statements: string[]): Promise<QueryResult[]> {
  const result = (await client.query(statements.join(';\n'))) as QueryResult | QueryResult[];
  return Array.isArray(result) ? result : [result];
}

export interface Trips {
  /**
   * Sends `statements` in one round trip (after `START TRANSACTION`, and the lock, on the first
   * trip; with `COMMIT` after them when `commit`); the rows each answered.
   */
  send(statements: Statement[], options?: { commit?: boolean }): Promise<Record<string, unknown>[][]>;
}

/**
 * A transaction whose statements go to PostgreSQL in as few round trips as the code between them
 * allows (`DataSource.transaction` sends BEGIN, each statement and COMMIT one at a time): `work` sends them a trip at a time (`Trips.send`), the transaction's start with the
 * first and its COMMIT with the last. With `lock`, the first trip takes that transaction-scoped
 * advisory lock before any other statement, so each of them takes its snapshot after every
 * transaction that held the lock before. Committed after `work` when it sent no COMMIT itself;
 * rolled back when anything failed.
 */
export async function tripTransaction<T>(db: DataSource, options: { lock?: number }, work: (trips: Trips) => Promise<T>): Promise<T> {
  const { lock } = options;
  if (lock !== undefined && !Number.isSafeInteger(lock)) throw new Error(`an advisory lock is an integer, not ${lock}`);
  return onConnection(db, async (runner) => {
    const client = (await runner.connect()) as PoolClient;
    let begun = false;
    let committed = false;
    const trips: Trips = {
      async send(statements, { commit = false } = {}) {
        if (committed) throw new Error('tripTransaction: the transaction has been committed');
        const texts = statements.map(inlineParameters);
        const opening = begun ? [] : ['START TRANSACTION', ...(lock === undefined ? [] : [`SELECT pg_advisory_xact_lock(${lock})`])];
        const results = await sendTogether(client, [...opening, ...texts, ...(commit ? ['COMMIT'] : [])]);
        begun = true;
        committed = commit;
        return results.slice(opening.length, opening.length + texts.length).map((result) => result.rows as Record<string, unknown>[]);
      },
    };
    const result = await work(trips);
    if (begun && !committed) await client.query('COMMIT');
    return result;
  });
}

/**
 * `work` on a connection of its own, rolled back when it fails; a connection that cannot roll
 * back is not given back to the pool for another caller.
 */
export async function onConnection<T>(db: DataSource, work: (runner: QueryRunner) => Promise<T>): Promise<T> {
  const runner = db.createQueryRunner();
  try {
    return await work(runner);
  } catch (error) {
    const broken = await runner.query('ROLLBACK').then(() => undefined, (rollback: unknown) => rollback as Error);
    // (TypeORM's own release with an error, as its transactions use it; not in its typings.)
    await (runner as unknown as { releasePostgresConnection(error?: Error): Promise<void> }).releasePostgresConnection(broken);
    throw error;
  } finally {
    await runner.release();
  }
}
