import { DataSourceOptions } from 'typeorm';
import { PostgresDataSourceOptions as PostgresConnectionOptions } from 'typeorm/driver/postgres/PostgresDataSourceOptions.js';

export type SchemaRole = 'controller' | 'dispatcher';

export interface DatabaseSettings {
  url: string;
  poolSize: number;
  migrationsRun: boolean;
}

/**
 * One data source per role, each in its own PostgreSQL schema, so the roles can share a
 * server or not. `synchronize` is never on: every table comes from a migration.
 */
export function roleDataSourceOptions(
  role: SchemaRole,
  settings: DatabaseSettings,
  parts: { entities: DataSourceOptions['entities']; migrations: DataSourceOptions['migrations'] },
): PostgresConnectionOptions {
  return {
    type: 'postgres',
    url: settings.url,
    schema: role,
    entities: parts.entities,
    migrations: parts.migrations,
    migrationsTableName: 'migrations',
    migrationsRun: false,
    migrationsTransactionMode: 'each',
    synchronize: false,
    uuidExtension: 'pgcrypto',
    applicationName: `agent-tasks-${role}`,
    extra: { max: settings.poolSize, connectionTimeoutMillis: 5000 },
  };
}
