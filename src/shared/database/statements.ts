import { createHash } from 'node:crypto';
import type { Pool } from 'pg';
import type { DataSource, EntityMetadata } from 'typeorm';

/**
 * The few statements on a hot path (a webhook's ledger row, a task's insert, lookup and
 * transition) run on TypeORM's own pg pool as named prepared statements: PostgreSQL parses
 * and plans each once per connection, and the request skips the query builder, which cost
 * more CPU than the database did. Everything else stays with TypeORM.
 *
 * Texts are built from entity metadata, so a column added to an entity is written here
 * without a second list to keep.
 */
export async function runPrepared<T = Record<string, unknown>>(db: DataSource, text: string, values: unknown[]): Promise<T[]> {
  const pool = (db.driver as unknown as { master: Pool }).master;
  const result = await pool.query({ name: statementName(text), text, values });
  return result.rows as T[];
}

const names = new Map<string, string>();

/** A stable name per statement text (pg keys prepared statements by name on each connection). */
function statementName(text: string): string {
  let name = names.get(text);
  if (!name) {
    name = `s_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`;
    names.set(text, name);
  }
  return name;
}

/** A column value as SQL takes it: a parameter, or an SQL expression given as `() => 'now()'`. */
export type ColumnValue = unknown | (() => string);

/** `INSERT` column list, placeholders from `$first`, and their parameters, for the given properties. */
export function insertParts(metadata: EntityMetadata, values: Record<string, ColumnValue>, first = 1) {
  const columns = metadata.columns.filter((column) => values[column.propertyName] !== undefined);
  const params: unknown[] = [];
  const placeholders = columns.map((column) => {
    const value = values[column.propertyName];
    if (typeof value === 'function') return (value as () => string)();
    params.push(column.type === 'jsonb' && value !== null ? JSON.stringify(value) : value);
    return `$${first + params.length - 1}`;
  });
  return {
    names: columns.map((column) => `"${column.databaseName}"`).join(', '),
    placeholders: placeholders.join(', '),
    params,
  };
}

/** `SET` assignments from `$first` for the given properties, SQL expressions inline. */
export function setParts(metadata: EntityMetadata, values: Record<string, ColumnValue>, first = 1) {
  const params: unknown[] = [];
  const assignments = metadata.columns
    .filter((column) => values[column.propertyName] !== undefined)
    .map((column) => {
      const value = values[column.propertyName];
      if (typeof value === 'function') return `"${column.databaseName}" = ${(value as () => string)()}`;
      params.push(column.type === 'jsonb' && value !== null ? JSON.stringify(value) : value);
      return `"${column.databaseName}" = $${first + params.length - 1}`;
    });
  return { assignments: assignments.join(', '), params };
}

/** The columns an entity loads by default (not those marked `select: false`), as a SELECT list. */
export function selectedColumns(metadata: EntityMetadata, alias?: string): string {
  const prefix = alias ? `${alias}.` : '';
  return metadata.columns.filter((column) => column.isSelect).map((column) => `${prefix}"${column.databaseName}"`).join(', ');
}

/** A row as PostgreSQL returned it, as the entity TypeORM would have loaded. */
export function hydrate<T>(db: DataSource, metadata: EntityMetadata, row: Record<string, unknown>): T {
  const entity = metadata.create() as T;
  for (const column of metadata.columns) {
    if (column.databaseName in row) column.setEntityValue(entity as object, db.driver.prepareHydratedValue(row[column.databaseName], column));
  }
  return entity;
}
