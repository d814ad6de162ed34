import { DataSource } from 'typeorm';
import { PostgresDataSourceOptions as PostgresConnectionOptions } from 'typeorm/driver/postgres/PostgresDataSourceOptions.js';

/**
 * Creates the role's schema (TypeORM keeps its migrations table inside it, so it must
 * exist first) and runs pending migrations, serialised across replicas by an advisory lock.
 */
export async function runMigrations(options: PostgresConnectionOptions): Promise<string[]> {
  const source = new DataSource({ ...options, extra: { ...(options.extra ?? {}), max: 1 } });
  await source.initialize();
  try {
    const lockId = hash(`migrations:${options.schema}`);
    await source.query('SELECT pg_advisory_lock($1)', [lockId]);
    try {
      await source.query(`CREATE SCHEMA IF NOT EXISTS "${options.schema}"`);
      const applied = await source.runMigrations({ transaction: 'each' });
      return applied.map((migration) => migration.name);
    } finally {
      await source.query('SELECT pg_advisory_unlock($1)', [lockId]);
    }
  } finally {
    await source.destroy();
  }
}

function hash(text: string): number {
  let value = 0;
  for (const char of text) value = (Math.imul(value, 31) + char.charCodeAt(0)) | 0;
  return value;
}
