import type { PoolClient, QueryResult } from 'pg';
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
 * quoted as pg's `escapeLiteral` quotes it; the literal carries no type, so PostgreSQL infers it
 * from where it stands, as it does for the untyped parameters pg sends. `$n` inside a quoted
 * string or identifier is left alone; a dollar-quoted string is refused (none of ours has one).
 *
 * A text is cut at its placeholders once and the pieces kept (`templateOf`): a claim's statements
 * are the same few texts every time, and walking them a character at a time on each call made
 * more garbage than the rest of a task's life together.
 */
export function inlineParameters({ text, values = [] }: Statement): string {
  const template = templateOf(text);
  let out = template[0] as string;
  for (let at = 1; at < template.length; at += 2) {
    const index = template[at] as number;
    if (index < 0 || index >= values.length) throw new Error(`inlineParameters: $${index + 1} has no value (${values.length} given)`);
    out += literalOf(values[index]) + (template[at + 1] as string);
  }
  return out;
}

/** A text cut at its placeholders: its pieces, with the 0-based index of each placeholder's value between them. */
type Template = readonly (string | number)[];

/** The texts cut so far. Ours are a few dozen; a text built per call would only refill it. */
const templates = new Map<string, Template>();
const TEMPLATES_KEPT = 1000;

function templateOf(text: string): Template {
  let template = templates.get(text);
  if (template === undefined) {
    template = cutAtPlaceholders(text);
    if (templates.size >= TEMPLATES_KEPT) templates.clear();
    templates.set(text, template);
  }
  return template;
}

function cutAtPlaceholders(text: string): Template {
  const pieces: (string | number)[] = [];
  const special = /['"$]/g;
  const placeholder = /\$(\d+)/y;
  let piece = 0;
  for (let found = special.exec(text); found !== null; found = special.exec(text)) {
    const at = found.index;
    if (text[at] !== '$') {
      special.lastIndex = closingQuote(text, at);
      continue;
    }
    placeholder.lastIndex = at;
    const digits = placeholder.exec(text);
    if (!digits || /[\w$]/.test(text[at - 1] ?? '')) throw new Error(`inlineParameters: a dollar-quoted string or a stray $ at ${at} of ${JSON.stringify(text.slice(0, 80))}`);
    pieces.push(text.slice(piece, at), Number(digits[1]) - 1);
    piece = special.lastIndex = at + digits[0].length;
  }
  pieces.push(text.slice(piece));
  return pieces;
}

/** The index just past the quote closing the one at `start` (a doubled quote is part of the text). */
function closingQuote(text: string, start: number): number {
  const quote = text[start];
  for (let at = text.indexOf(quote, start + 1); at !== -1; at = text.indexOf(quote, at + 1)) {
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
  return quotedLiteral(prepared);
}

/** `text` as pg's `escapeLiteral` writes it (quotes doubled; with a backslash, doubled too in an E'' string), in a few copies rather than one per character. */
function quotedLiteral(text: string): string {
  if (!/['\\]/.test(text)) return `'${text}'`;
  const quoted = `'${text.replace(/'/g, "''").replace(/\\/g, '\\\\')}'`;
  return text.includes('\\') ? ` E${quoted}` : quoted;
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
