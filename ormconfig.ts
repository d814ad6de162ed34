import { DataSource } from 'typeorm';
import { roleDataSourceOptions, SchemaRole } from './src/shared/database/data-sources';
import { SCHEMA_PARTS } from './src/shared/database/schema-parts';

/**
 * Data sources for the TypeORM CLI (`npm run migration:*`). The role comes from
 * `MIGRATION_ROLE` (controller or dispatcher); the database from DATABASE_URL.
 */
const role = (process.env.MIGRATION_ROLE ?? 'controller') as SchemaRole;
if (role !== 'controller' && role !== 'dispatcher') throw new Error('MIGRATION_ROLE must be controller or dispatcher');
if (!process.env.DATABASE_URL) throw new Error('DATABASE_URL is required for the migration commands');

export default new DataSource(
  roleDataSourceOptions(
    role,
    { url: process.env.DATABASE_URL, poolSize: 1, migrationsRun: false },
    SCHEMA_PARTS[role],
  ),
);
