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

/**
 * The SQL of one shape of a write: which properties it sets, and which of them are SQL
 * expressions (with their text). Built from the entity's metadata once per shape and kept:
 * a hot path writes the same few shapes over and over.
 */
interface WriteShape {
  /** Column names, quoted, in metadata order. */
  names: string[];
  /** Per column: null for a parameter, or the SQL expression. */
  expressions: (string | null)[];
  /** Properties that take parameters, in order, and whether each is jsonb. */
  parameters: { property: string; json: boolean }[];
}

const shapes = new WeakMap<EntityMetadata, Map<string, WriteShape>>();

/** Which properties a write sets, and the SQL of those set to expressions: writes with one key share a statement. */
export function shapeKey(values: Record<string, ColumnValue>): string {
  const keys = Object.keys(values).filter((key) => values[key] !== undefined).sort();
  return keys.map((property) => (typeof values[property] === 'function' ? `${property}=${(values[property] as () => string)()}` : property)).join('|');
}

/** `items` in groups whose rows (`rowOf`) share a shape: one multi-row statement a group. */
export function byShape<T>(items: T[], rowOf: (item: T) => Record<string, ColumnValue>): T[][] {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const key = shapeKey(rowOf(item));
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return [...groups.values()];
}

function shapeOf(metadata: EntityMetadata, values: Record<string, ColumnValue>): WriteShape {
  const key = shapeKey(values);
  let byKey = shapes.get(metadata);
  if (!byKey) shapes.set(metadata, (byKey = new Map()));
  let shape = byKey.get(key);
  if (!shape) {
    const columns = metadata.columns.filter((column) => values[column.propertyName] !== undefined);
    shape = {
      names: columns.map((column) => `"${column.databaseName}"`),
      expressions: columns.map((column) => (typeof values[column.propertyName] === 'function' ? (values[column.propertyName] as () => string)() : null)),
      parameters: columns
        .filter((column) => typeof values[column.propertyName] !== 'function')
        .map((column) => ({ property: column.propertyName, json: column.type === 'jsonb' })),
    };
    byKey.set(key, shape);
  }
  return shape;
}

function parametersOf(shape: WriteShape, values: Record<string, ColumnValue>): unknown[] {
  return shape.parameters.map(({ property, json }) => {
    const value = values[property];
    return json && value !== null ? JSON.stringify(value) : value;
  });
}

/** `INSERT` column list, placeholders from `$first`, and their parameters, for the given properties. */
export function insertParts(metadata: EntityMetadata, values: Record<string, ColumnValue>, first = 1) {
  const shape = shapeOf(metadata, values);
  let next = first;
  return {
    names: shape.names.join(', '),
    placeholders: shape.expressions.map((expression) => expression ?? `$${next++}`).join(', '),
    params: parametersOf(shape, values),
  };
}

/**
 * A multi-row `INSERT` of rows that set the same properties (the first row's shape, see
 * `shapeKey`), parameters from `$first`: one array parameter per column, unnested, so the
 * text (and its prepared statement) is one whatever the number of rows. Answers the column
 * list, the `SELECT` that yields the rows, and the parameters.
 */
export function insertRowsParts(metadata: EntityMetadata, rows: Record<string, ColumnValue>[], first = 1) {
  const shape = shapeOf(metadata, rows[0]);
  return { ...rowsSqlOf(metadata, shape, first), params: columnsOf(rows.map((row) => parametersOf(shape, row)), shape.parameters.length) };
}

const rowsSql = new WeakMap<WriteShape, Map<number, { names: string; select: string }>>();

/** `insertRowsParts`' SQL of one shape from one first parameter, built once and kept (each write of a batch needs it). */
function rowsSqlOf(metadata: EntityMetadata, shape: WriteShape, first: number): { names: string; select: string } {
  let byFirst = rowsSql.get(shape);
  if (!byFirst) rowsSql.set(shape, (byFirst = new Map()));
  let sql = byFirst.get(first);
  if (!sql) {
    const driver = metadata.dataSource.driver;
    const types = new Map(metadata.columns.map((column) => [column.propertyName, driver.normalizeType(column)]));
    let next = first;
    const placeholders = shape.parameters.map(({ property }) => `$${next++}::${types.get(property)}[]`);
    let column = 0;
    sql = {
      names: shape.names.join(', '),
      select: `SELECT ${shape.expressions.map((expression) => expression ?? `u.c${column++}`).join(', ')}
               FROM unnest(${placeholders.join(', ')}) AS u(${shape.parameters.map((_, i) => `c${i}`).join(', ')})`,
    };
    byFirst.set(first, sql);
  }
  return sql;
}

/** Rows of parameters as one array per column. */
function columnsOf(rows: unknown[][], width: number): unknown[][] {
  return Array.from({ length: width }, (_, i) => rows.map((row) => row[i]));
}

/** `SET` assignments from `$first` for the given properties, SQL expressions inline. */
export function setParts(metadata: EntityMetadata, values: Record<string, ColumnValue>, first = 1) {
  const shape = shapeOf(metadata, values);
  let next = first;
  return {
    assignments: shape.names.map((name, index) => `${name} = ${shape.expressions[index] ?? `$${next++}`}`).join(', '),
    params: parametersOf(shape, values),
  };
}

/** The columns an entity loads by default (not those marked `select: false`), as a SELECT list. */
export function selectedColumns(metadata: EntityMetadata, alias?: string): string {
  const prefix = alias ? `${alias}.` : '';
  return metadata.columns.filter((column) => column.isSelect).map((column) => `${prefix}"${column.databaseName}"`).join(', ');
}

/** The columns of the named properties, as a SELECT list: a statement that needs a few of a wide row's columns reads only those. */
export function namedColumns<T>(metadata: EntityMetadata, properties: readonly (keyof T & string)[]): string {
  return properties.map((property) => {
    const column = metadata.findColumnWithPropertyName(property);
    if (!column) throw new Error(`${metadata.name} has no column for ${property}`);
    return `"${column.databaseName}"`;
  }).join(', ');
}

/** A row as PostgreSQL returned it, as the entity TypeORM would have loaded. */
export function hydrate<T>(db: DataSource, metadata: EntityMetadata, row: Record<string, unknown>): T {
  const entity = metadata.create() as T;
  for (const column of metadata.columns) {
    if (column.databaseName in row) column.setEntityValue(entity as object, db.driver.prepareHydratedValue(row[column.databaseName], column));
  }
  return entity;
}
