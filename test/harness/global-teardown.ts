import * as fs from 'node:fs';
import { Client } from 'pg';

interface State {
  workDir: string;
  pglite?: { stop(): Promise<void> };
  s3?: { stop(): Promise<void> };
}

/** Drops this run's databases and stops what the global setup started. */
export default async function globalTeardown(): Promise<void> {
  const state = (globalThis as Record<string, unknown>).__ATC_TEST_STATE__ as State | undefined;
  if (process.env.ATC_TEST_DATABASE_KIND === 'postgres' && process.env.ATC_TEST_DATABASE_URL) {
    const client = new Client({ connectionString: process.env.ATC_TEST_DATABASE_URL });
    await client.connect();
    const { rows } = await client.query<{ datname: string }>(
      'SELECT datname FROM pg_database WHERE datname LIKE $1',
      [`atc_test_${process.env.ATC_TEST_RUN_ID}_%`],
    );
    for (const { datname } of rows) {
      await client.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`).catch(() => undefined);
    }
    await client.end();
  }
  await state?.s3?.stop();
  await state?.pglite?.stop();
  if (state?.workDir) fs.rmSync(state.workDir, { recursive: true, force: true });
}
