import { DataSource } from 'typeorm';
import { roleDataSourceOptions, SchemaRole } from '../../src/shared/database/data-sources';
import { runMigrations } from '../../src/shared/database/migrate';
import { SCHEMA_PARTS } from '../../src/shared/database/schema-parts';
import { freshDatabaseUrl } from '../harness/database';

/**
 * The entities describe exactly what the migrations build: `npm run migration:generate`
 * then writes only real changes, never a migration that drops an index or a check that
 * an entity forgot to declare.
 */
describe.each<SchemaRole>(['controller', 'dispatcher'])('the %s schema', (role) => {
  it('matches its entities after every migration has run', async () => {
    const options = roleDataSourceOptions(role, { url: await freshDatabaseUrl(), poolSize: 1, migrationsRun: false }, SCHEMA_PARTS[role]);
    await runMigrations(options);
    const source = await new DataSource(options).initialize();
    try {
      const pending = await source.driver.createSchemaBuilder().log();
      expect(pending.upQueries.map((query) => query.query)).toEqual([]);
    } finally {
      await source.destroy();
    }
  });

  it('reverts every migration, newest first, down to an empty schema, and migrates up again', async () => {
    const options = roleDataSourceOptions(role, { url: await freshDatabaseUrl(), poolSize: 1, migrationsRun: false }, SCHEMA_PARTS[role]);
    await runMigrations(options);
    const source = await new DataSource(options).initialize();
    const tables = async () =>
      (await source.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_name NOT IN ('migrations', 'migration_checksums') ORDER BY 1`, [role]))
        .map((row: { table_name: string }) => row.table_name);
    try {
      const built = await tables();
      expect(built.length).toBeGreaterThan(0);
      for (let i = 0; i < SCHEMA_PARTS[role].migrations.length; i++) await source.undoLastMigration();
      expect(await tables()).toEqual([]);
      await source.runMigrations();
      expect(await tables()).toEqual(built);
      expect((await source.driver.createSchemaBuilder().log()).upQueries).toEqual([]);
    } finally {
      await source.destroy();
    }
  });
});
