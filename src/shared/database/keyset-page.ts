import type { ObjectLiteral, SelectQueryBuilder } from 'typeorm';

/**
 * Keyset pagination for lists ordered newest first by `(time, id)`. A page is found by
 * walking an index from a row's key rather than by counting rows from the top, so page
 * 20,000 costs what page 1 does, and a row inserted meanwhile neither repeats nor hides one.
 *
 * The key travels in an opaque cursor: base64url of `[direction, time, id]`, where the
 * time is PostgreSQL's own text at microsecond precision (a JavaScript Date would cut it
 * to milliseconds and skip rows sharing a millisecond).
 */
export interface PageCursor {
  /** `after`: the rows older than the key (the next page); `before`: the newer ones (the previous page). */
  direction: 'after' | 'before';
  time: string;
  id: string;
}

export interface KeysetRequest {
  limit: number;
  cursor?: PageCursor;
  /** Accepted for clients written against offset pages; only used without a cursor. */
  offset?: number;
  /** An exact count however many rows match, at the price of counting them all. */
  exactCount?: boolean;
}

/** The key columns of a list, as SQL on the query builder's alias (`t.created_at`, `t.guid`). */
export interface KeysetColumns {
  time: string;
  id: string;
  /**
   * The list's equality filters when they are the leading columns of an index `(lead..., time,
   * id)` (`equalityFilters` decides). Their index is then the page's order too, so the walk is
   * one page long whatever the planner believes of how the matches lie in time.
   */
  lead?: LeadFilter[];
}

/** One equality filter: a column as SQL on the query builder's alias, and its value. */
export interface LeadFilter {
  column: string;
  value: string;
}

export interface KeysetPage<T> {
  items: T[];
  count: number;
  /** True when `count` is the planner's estimate rather than a count of rows. */
  countEstimated: boolean;
  next: PageCursor | null;
  previous: PageCursor | null;
}

/**
 * Counts up to this many rows exactly (an index-only walk of the filter's index); past it
 * the count is PostgreSQL's estimate for the filter and the page says so.
 */
export const EXACT_COUNT_LIMIT = 10_000;

const CURSOR = /^[A-Za-z0-9_-]{1,400}$/;
const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/;

export function encodeCursor(cursor: PageCursor): string {
  return Buffer.from(JSON.stringify([cursor.direction === 'after' ? 'a' : 'b', cursor.time, cursor.id])).toString('base64url');
}

/** The cursor a client sent back, or null when it is not one this server wrote. */
export function decodeCursor(text: string): PageCursor | null {
  if (!CURSOR.test(text)) return null;
  try {
    const value: unknown = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
    if (!Array.isArray(value) || value.length !== 3) return null;
    const [direction, time, id] = value as unknown[];
    if ((direction !== 'a' && direction !== 'b') || typeof time !== 'string' || typeof id !== 'string') return null;
    if (!TIME.test(time) || id.length === 0 || id.length > 200) return null;
    return { direction: direction === 'a' ? 'after' : 'before', time, id };
  } catch {
    return null;
  }
}

/**
 * One page of `query` (its filters applied, no order or limit yet) in `(time, id)` order,
 * newest first, with the cursors of the pages on either side and the count of all rows the
 * filters match. Three to four index walks, each bounded by the page size or the count limit.
 */
export async function keysetPage<T extends ObjectLiteral>(
  query: SelectQueryBuilder<T>,
  columns: KeysetColumns,
  request: KeysetRequest,
): Promise<KeysetPage<T>> {
  const [rows, counted] = await Promise.all([readPage(query.clone(), columns, request), countRows(query.clone(), columns, request.exactCount)]);
  const { items, keys, moreBeyond } = rows;
  const first = keys[0];
  const last = keys[keys.length - 1];
  const cursor = request.cursor;
  let next: PageCursor | null = null;
  let previous: PageCursor | null = null;
  if (!cursor || cursor.direction === 'after') {
    if (moreBeyond && last) next = { direction: 'after', ...last };
    if (first) {
      if (cursor || (request.offset ?? 0) > 0) {
        previous = (await exists(query.clone(), columns, { direction: 'before', ...first })) ? { direction: 'before', ...first } : null;
      }
    } else if (cursor) {
      previous = { ...cursor, direction: 'before' };
    }
  } else {
    if (moreBeyond && first) previous = { direction: 'before', ...first };
    if (last) {
      next = (await exists(query.clone(), columns, { direction: 'after', ...last })) ? { direction: 'after', ...last } : null;
    } else {
      next = { ...cursor, direction: 'after' };
    }
  }
  return { items, count: counted.count, countEstimated: counted.estimated, next, previous };
}

interface RowKey {
  time: string;
  id: string;
}

async function readPage<T extends ObjectLiteral>(
  query: SelectQueryBuilder<T>,
  columns: KeysetColumns,
  request: KeysetRequest,
): Promise<{ items: T[]; keys: RowKey[]; moreBeyond: boolean }> {
  const cursor = request.cursor;
  const newerFirst = !cursor || cursor.direction === 'after';
  if (cursor) where(query, columns, cursor);
  else leadRange(query, columns);
  const order = newerFirst ? 'DESC' : 'ASC';
  query
    .addSelect(`to_char(${columns.time} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`, 'page_key_time')
    .addSelect(`${columns.id}::text`, 'page_key_id');
  orderByKey(query, columns, order).limit(request.limit + 1);
  if (!cursor && request.offset) query.offset(request.offset);
  const { entities, raw } = await query.getRawAndEntities<{ page_key_time: string; page_key_id: string }>();
  const moreBeyond = entities.length > request.limit;
  let items = entities.slice(0, request.limit);
  let keys = raw.slice(0, request.limit).map((row) => ({ time: row.page_key_time, id: row.page_key_id }));
  if (!newerFirst) {
    items = items.reverse();
    keys = keys.reverse();
  }
  return { items, keys, moreBeyond };
}

function where<T extends ObjectLiteral>(query: SelectQueryBuilder<T>, columns: KeysetColumns, cursor: PageCursor): void {
  const comparison = cursor.direction === 'after' ? '<' : '>';
  const lead = leadSql(query, columns.lead);
  if (lead) {
    // Beyond the key inside the lead's stretch of its index: the row comparison places the
    // walk at the key, the bound on the lead ends it where the lead's value does.
    query.andWhere(`(${lead.columns}) ${cursor.direction === 'after' ? '>=' : '<='} (${lead.values})`);
  }
  const prefix = (sql: string | undefined) => (sql ? `${sql}, ` : '');
  query.andWhere(
    `(${prefix(lead?.columns)}${columns.time}, ${columns.id}) ${comparison} (${prefix(lead?.values)}CAST(:pageKeyTime AS timestamptz), :pageKeyId)`,
    { pageKeyTime: cursor.time, pageKeyId: cursor.id },
  );
}

/**
 * The lead's columns and parameters as SQL (`d.outcome` and `:lead0`), its values set on the
 * query; undefined for a list without one.
 */
function leadSql<T extends ObjectLiteral>(query: SelectQueryBuilder<T>, lead: LeadFilter[] | undefined): { columns: string; values: string } | undefined {
  if (!lead?.length) return undefined;
  lead.forEach((filter, i) => query.setParameter(`lead${i}`, filter.value));
  return { columns: lead.map((filter) => filter.column).join(', '), values: lead.map((_, i) => `:lead${i}`).join(', ') };
}

/**
 * The lead's filter as two bounds, `(lead) >= (values) AND (lead) <= (values)`: the same rows
 * as equality, but not an equality to the planner, which would drop an equal column from the
 * sort keys and then walk whichever index gives `(time, id)` order. With a value that most
 * rows have, that is the time index checking every entry: one page long where the matches are
 * spread, a walk past every newer row of other values where they are not (83,000 at a million
 * rows clustered). Kept in the order, the lead leaves the filter's index the one walk that
 * needs no sort.
 */
function leadRange<T extends ObjectLiteral>(query: SelectQueryBuilder<T>, columns: KeysetColumns): void {
  const lead = leadSql(query, columns.lead);
  if (lead) query.andWhere(`(${lead.columns}) >= (${lead.values}) AND (${lead.columns}) <= (${lead.values})`);
}

/** The lead as plain equality, for statements that walk no index in order (an exact count, the planner's estimate). */
function leadEquality<T extends ObjectLiteral>(query: SelectQueryBuilder<T>, columns: KeysetColumns): void {
  const lead = leadSql(query, columns.lead);
  if (lead) query.andWhere(`(${lead.columns}) = (${lead.values})`);
}

function orderByKey<T extends ObjectLiteral>(query: SelectQueryBuilder<T>, columns: KeysetColumns, order: 'ASC' | 'DESC'): SelectQueryBuilder<T> {
  query.orderBy();
  for (const column of [...(columns.lead ?? []).map((filter) => filter.column), columns.time, columns.id]) query.addOrderBy(column, order);
  return query;
}

/**
 * Applies a list's equality filters (column -> value; unset ones left out) to `query` and
 * answers the list's key columns: when the filters set are exactly the leading columns of one
 * of `indexes` (each `(columns..., time, id)`, the leading columns listed), they become the
 * key's lead (see `leadRange`); otherwise each is a plain condition and the planner picks.
 */
export function equalityFilters<T extends ObjectLiteral>(
  query: SelectQueryBuilder<T>,
  key: { time: string; id: string },
  filters: Record<string, string | undefined>,
  indexes: string[][],
): KeysetColumns {
  const set = Object.entries(filters).filter((entry): entry is [string, string] => entry[1] !== undefined);
  const index = set.length > 0 ? indexes.find((columns) => columns.length === set.length && set.every(([column]) => columns.includes(column))) : undefined;
  if (index) return { ...key, lead: index.map((column) => ({ column, value: filters[column]! })) };
  set.forEach(([column, value], i) => query.andWhere(`${column} = :equal${i}`, { [`equal${i}`]: value }));
  return key;
}

/** Whether a row lies beyond `cursor`: ordered from the key outwards, so it is one step of the filter's index. */
async function exists<T extends ObjectLiteral>(query: SelectQueryBuilder<T>, columns: KeysetColumns, cursor: PageCursor): Promise<boolean> {
  where(query, columns, cursor);
  const order = cursor.direction === 'after' ? 'DESC' : 'ASC';
  const [sql, parameters] = orderByKey(query.select('1'), columns, order).limit(1).getQueryAndParameters();
  const rows = (await query.dataSource.query(sql, parameters)) as unknown[];
  return rows.length > 0;
}

/**
 * The capped count reads the first EXACT_COUNT_LIMIT + 1 matching rows in the list's own
 * order: the only plan for that without sorting every match is a walk of the filter's
 * `(filter, time, id)` index, whatever the planner believes of how the matches lie in the
 * table. (Unordered, a LIMIT invites a sequential scan that expects to meet its matches
 * early: at a million rows with one filter's matches spread through them, it reads most of
 * the table.)
 */
async function countRows<T extends ObjectLiteral>(query: SelectQueryBuilder<T>, columns: KeysetColumns, exact = false): Promise<{ count: number; estimated: boolean }> {
  const unordered = query.clone().select('1').orderBy();
  leadEquality(unordered, columns);
  const [sql, parameters] = unordered.getQueryAndParameters();
  const db = query.dataSource;
  if (exact) {
    const [row] = (await db.query(`SELECT count(*)::int AS n FROM (${sql}) matched`, parameters)) as { n: number }[];
    return { count: row.n, estimated: false };
  }
  leadRange(query, columns);
  const [capped, cappedParameters] = orderByKey(query.select('1'), columns, 'DESC').limit(EXACT_COUNT_LIMIT + 1).getQueryAndParameters();
  const [row] = (await db.query(`SELECT count(*)::int AS n FROM (${capped}) matched`, cappedParameters)) as { n: number }[];
  if (row.n <= EXACT_COUNT_LIMIT) return { count: row.n, estimated: false };
  const [plan] = (await db.query(`EXPLAIN (FORMAT JSON) ${sql}`, parameters)) as { 'QUERY PLAN': [{ Plan: { 'Plan Rows': number } }] }[];
  const estimate = Math.round(plan['QUERY PLAN'][0].Plan['Plan Rows']);
  // The planner's guess can fall below what was just counted; never answer less than that.
  return { count: Math.max(estimate, row.n), estimated: true };
}
