import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { testServices } from './services';

/**
 * A database of its own for one spec file: on PostgreSQL a new database named after the
 * run (dropped by the global teardown); on PGlite, which has one database, the roles'
 * schemas are dropped instead and specs run one at a time.
 */
export async function freshDatabaseUrl(): Promise<string> {
  const services = testServices();
  const admin = new Client({ connectionString: services.databaseUrl });
  await admin.connect();
  try {
    if (services.databaseKind === 'pglite') {
      await admin.query('DROP SCHEMA IF EXISTS controller CASCADE');
      await admin.query('DROP SCHEMA IF EXISTS dispatcher CASCADE');
      return services.databaseUrl;
    }
    const name = `atc_test_${services.runId}_${randomBytes(4).toString('hex')}`;
    await admin.query(`CREATE DATABASE "${name}"`);
    const url = new URL(services.databaseUrl);
    url.pathname = `/${name}`;
    return url.toString();
  } finally {
    await admin.end();
  }
}
