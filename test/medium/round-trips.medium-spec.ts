import fc from 'fast-check';
import { DataSource } from 'typeorm';
import { inlineParameters, tripTransaction } from '../../src/shared/database/round-trips';
import { sentStatements } from '../harness/pg-statements';
import { controllerDatabase } from './controller-tasks';

const LOCK = 424_243;

/** Text PostgreSQL stores: any Unicode but NUL, with the characters quoting is about made likely. */
const text = fc.string({ unit: fc.oneof(fc.constantFrom("'", '"', '\\', '$', '{', '}', ',', ' ', '\n', 'NULL', 'E', 'x'), fc.string({ unit: 'grapheme', maxLength: 1 })) })
  .map((value) => value.replace(/\0/g, ''));

/** A value and the type it is read back as: each kind of value a statement of ours passes. */
const typedValue = fc.oneof(
  text.map((value) => ({ value: value as unknown, type: 'text' })),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map((value) => ({ value: value.toString(), type: 'int8' })),
  fc.integer().map((value) => ({ value: value as unknown, type: 'int4' })),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((value) => ({ value: value as unknown, type: 'float8' })),
  fc.boolean().map((value) => ({ value: value as unknown, type: 'bool' })),
  fc.constant({ value: null as unknown, type: 'text' }),
  fc.date({ min: new Date('1970-01-01'), max: new Date('2200-01-01'), noInvalidDate: true }).map((value) => ({ value: value as unknown, type: 'timestamptz' })),
  fc.array(fc.option(text, { nil: null })).map((value) => ({ value: value as unknown, type: 'text[]' })),
  // As our writes pass JSON: a JSON text (an array would otherwise be an SQL array), or an object pg writes as JSON.
  fc.jsonValue().map((value) => JSON.stringify(value)).filter((json) => !json.includes('\\u0000')).map((value) => ({ value: value as unknown, type: 'jsonb' })),
  fc.dictionary(fc.string(), fc.oneof(fc.string(), fc.integer(), fc.boolean())).map((value) => ({ value: value as unknown, type: 'jsonb' })),
  fc.uint8Array().map((value) => ({ value: Buffer.from(value) as unknown, type: 'bytea' })),
);

/** Statements sent together in one simple-protocol query, their values written into the text. */
describe('round trips', () => {
  let sources: DataSource[];
  let close: () => Promise<void>;

  beforeAll(async () => {
    // Two replicas of one connection each: a connection not given back would stall the next call.
    ({ sources, close } = await controllerDatabase(2, 1));
    await sources[0].query('CREATE TABLE IF NOT EXISTS public.trips_spec (n int PRIMARY KEY, note text)');
  });
  afterAll(async () => {
    await sources[0].query('DROP TABLE IF EXISTS public.trips_spec');
    await close();
  });
  beforeEach(() => sources[0].query('TRUNCATE public.trips_spec'));

  it('writes every value as PostgreSQL reads the same value sent as a parameter', async () => {
    await fc.assert(fc.asyncProperty(fc.array(typedValue, { minLength: 1, maxLength: 4 }), async (values) => {
      const text = `SELECT ${values.map(({ type }, i) => `$${i + 1}::${type} AS v${i}`).join(', ')}`;
      const params = values.map(({ value }) => value);
      const [asParameters] = (await sources[0].query(text, params)) as Record<string, unknown>[];
      // A placeholder left in the text would fail here: the simple protocol has no parameters.
      const [asLiterals] = (await sources[0].query(inlineParameters({ text, values: params }))) as Record<string, unknown>[];
      expect(asLiterals).toEqual(asParameters);
    }), { numRuns: 300 });
  });

  it('leaves $n in quoted strings and identifiers alone, and refuses what it cannot write', async () => {
    const inlined = inlineParameters({ text: `SELECT '$1 it''s' AS "a$1""b", $1::text AS v, $2::int + 1 AS w`, values: ["o'k", 2] });
    expect(inlined).toBe(`SELECT '$1 it''s' AS "a$1""b", 'o''k'::text AS v, '2'::int + 1 AS w`);
    expect(await sources[0].query(inlined)).toEqual([{ 'a$1"b': "$1 it's", v: "o'k", w: 3 }]);
    // The text is cut once; the same text with other values writes those values.
    const again = inlineParameters({ text: `SELECT '$1 it''s' AS "a$1""b", $1::text AS v, $2::int + 1 AS w`, values: ['a\\b', 5] });
    expect(again).toBe(`SELECT '$1 it''s' AS "a$1""b",  E'a\\\\b'::text AS v, '5'::int + 1 AS w`);
    expect(await sources[0].query(again)).toEqual([{ 'a$1"b': "$1 it's", v: 'a\\b', w: 6 }]);
    expect(() => inlineParameters({ text: 'SELECT $2', values: [1] })).toThrow('$2 has no value');
    expect(() => inlineParameters({ text: 'SELECT $1, $2', values: [1] })).toThrow('$2 has no value');
    expect(() => inlineParameters({ text: 'SELECT $tag$ x $tag$', values: [] })).toThrow('dollar-quoted');
    expect(() => inlineParameters({ text: "SELECT 'open", values: [] })).toThrow('unclosed');
  });

  it('sends the transaction, the lock, the statements and COMMIT in one round trip', async () => {
    const sent = sentStatements();
    let rows: Record<string, unknown>[][];
    try {
      rows = await tripTransaction(sources[0], { lock: LOCK }, (trips) => trips.send([
        { text: 'INSERT INTO public.trips_spec VALUES ($1, $2) RETURNING n, note', values: [1, "it's"] },
        { text: 'SELECT count(*)::int AS n FROM public.trips_spec' },
      ], { commit: true }));
    } finally {
      sent.stop();
    }
    expect(rows).toEqual([[{ n: 1, note: "it's" }], [{ n: 1 }]]);
    expect(sent.texts).toHaveLength(1);
    expect(sent.texts[0]).toBe(`START TRANSACTION;\nSELECT pg_advisory_xact_lock(${LOCK});\nINSERT INTO public.trips_spec VALUES ('1', 'it''s') RETURNING n, note;\nSELECT count(*)::int AS n FROM public.trips_spec;\nCOMMIT`);
    expect(await sources[1].query('SELECT n FROM public.trips_spec')).toEqual([{ n: 1 }]);
  });

  it('holds one transaction across trips with code between them, and commits what sent no COMMIT', async () => {
    const sent = sentStatements();
    try {
      await tripTransaction(sources[0], {}, async (trips) => {
        const [[first]] = await trips.send([{ text: 'INSERT INTO public.trips_spec VALUES ($1) RETURNING n', values: [7] }]);
        // Not visible to another connection before the commit.
        expect(await sources[1].query('SELECT n FROM public.trips_spec')).toEqual([]);
        await trips.send([{ text: 'UPDATE public.trips_spec SET note = $2 WHERE n = $1', values: [first.n, 'seen'] }]);
      });
    } finally {
      sent.stop();
    }
    expect(sent.texts.filter((text) => !text.startsWith('SELECT n FROM'))).toEqual([
      "START TRANSACTION;\nINSERT INTO public.trips_spec VALUES ('7') RETURNING n",
      "UPDATE public.trips_spec SET note = 'seen' WHERE n = '7'",
      'COMMIT',
    ]);
    expect(await sources[1].query('SELECT n, note FROM public.trips_spec')).toEqual([{ n: 7, note: 'seen' }]);
  });

  it('makes a second replica wait for the lock, and its statement sees what the first committed', async () => {
    let release!: () => void;
    const holding = new Promise<void>((resolve) => (release = resolve));
    let first!: () => void;
    const firstHasLock = new Promise<void>((resolve) => (first = resolve));
    const one = tripTransaction(sources[0], { lock: LOCK }, async (trips) => {
      await trips.send([{ text: 'SELECT 1' }]);
      first();
      await holding;
      await trips.send([{ text: 'INSERT INTO public.trips_spec VALUES (1)' }], { commit: true });
    });
    await firstHasLock;
    const two = tripTransaction(sources[1], { lock: LOCK }, (trips) => trips.send([{ text: 'SELECT count(*)::int AS n FROM public.trips_spec' }], { commit: true }));
    const early = await Promise.race([two.then(() => 'answered'), new Promise((resolve) => setTimeout(() => resolve('waiting'), 300))]);
    expect(early).toBe('waiting');
    release();
    await one;
    expect(await two).toEqual([[{ n: 1 }]]);
  });

  it('rolls back a trip whose statement fails, and gives back a connection that works', async () => {
    await sources[0].query('INSERT INTO public.trips_spec VALUES (1)');
    await expect(tripTransaction(sources[0], { lock: LOCK }, (trips) => trips.send([
      { text: 'INSERT INTO public.trips_spec VALUES ($1)', values: [2] },
      { text: 'INSERT INTO public.trips_spec VALUES ($1)', values: [1] },
    ], { commit: true }))).rejects.toThrow('duplicate key');
    expect(await sources[0].query('SELECT n FROM public.trips_spec ORDER BY n')).toEqual([{ n: 1 }]);
    // The lock went with the rollback: the other replica takes it at once.
    expect(await sources[1].query('SELECT pg_try_advisory_lock($1) AS ok', [LOCK])).toEqual([{ ok: true }]);
    await sources[1].query('SELECT pg_advisory_unlock($1)', [LOCK]);
  });

  it('refuses a lock that is not an integer, before it opens anything', async () => {
    await expect(tripTransaction(sources[0], { lock: 1.5 }, async () => 1)).rejects.toThrow('integer');
    await expect(tripTransaction(sources[0], { lock: LOCK }, async () => 1)).resolves.toBe(1);
  });

  it('rolls back when the code between trips fails', async () => {
    await expect(tripTransaction(sources[0], {}, async (trips) => {
      await trips.send([{ text: 'INSERT INTO public.trips_spec VALUES (3)' }]);
      throw new Error('refused');
    })).rejects.toThrow('refused');
    expect(await sources[0].query('SELECT n FROM public.trips_spec')).toEqual([]);
  });
});
