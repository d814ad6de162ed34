import { DataSource } from 'typeorm';
import { PostgresDataSourceOptions as PostgresConnectionOptions } from 'typeorm/driver/postgres/PostgresDataSourceOptions.js';
import { SchemaRole } from './data-sources';
import { MigrationChecksums } from './migration-checksums';
import { SCHEMA_PARTS } from './schema-parts';

/**
 * Creates the role's schema (TypeORM keeps its migrations table inside it, so it must
 * exist first) and runs pending migrations, serialised across replicas by an advisory lock.
 * First it compares the applied migrations' recorded checksums with this build's list and
 * refuses to go on, naming the file, when one was edited after it was applied.
 */
export async function runMigrations(
  options: PostgresConnectionOptions,
  committed: Record<string, string> = SCHEMA_PARTS[options.schema as SchemaRole].checksums,
): Promise<string[]> {
  const source = new DataSource({ ...options, extra: { ...(options.extra ?? {}), max: 1 } });
  await source.initialize();
  try {
    const lockId = hash(`migrations:${options.schema}`);
    await source.query('SELECT pg_advisory_lock($1)', [lockId]);
    try {
      // Created only when missing: a role given its own schema by the operator (one database
      // role per component) needs no CREATE right on the database, which even IF NOT EXISTS asks for.
      const [found] = (await source.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [options.schema])) as unknown[];
      if (!found) await source.query(`CREATE SCHEMA IF NOT EXISTS "${options.schema}"`);
      const checksums = new MigrationChecksums(source, options.schema!, committed);
      checksums.requireListed(source.migrations.map((migration) => migration.name!));
      await checksums.verifyApplied();
      const applied = (await source.runMigrations({ transaction: 'each' })).map((migration) => migration.name);
      await checksums.recordApplied(applied);
      return applied;
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
