import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { startEmbeddedPostgres } from '../../src/shared/database/embedded-postgres';
import { postgresAnswers, redisAnswers } from './services';
import { startS3Server } from './s3-server';

/**
 * Starts or finds the real services the specs use: PostgreSQL (TEST_DATABASE_URL, else
 * 127.0.0.1:5432), Redis (TEST_REDIS_URL, else 127.0.0.1:6379), and an S3 server (s3rver)
 * on a loopback port. Where PostgreSQL or Redis is missing it says so once and falls back
 * to PGlite or the in-memory cache, unless ATC_TEST_REQUIRE_SERVICES=1 (CI sets it): then a
 * missing service stops the run, so a green run always means the real services answered.
 */
export default async function globalSetup(): Promise<void> {
  const runId = randomBytes(4).toString('hex');
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), `atc-test-${runId}-`));
  const state: Record<string, unknown> = { workDir };

  const required = process.env.ATC_TEST_REQUIRE_SERVICES === '1';
  const databaseUrl = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  if (await postgresAnswers(databaseUrl)) {
    process.env.ATC_TEST_DATABASE_URL = databaseUrl;
    process.env.ATC_TEST_DATABASE_KIND = 'postgres';
  } else if (required) {
    throw new Error(`ATC_TEST_REQUIRE_SERVICES=1: PostgreSQL at ${redact(databaseUrl)} did not answer`);
  } else {
    const embedded = await startEmbeddedPostgres(path.join(workDir, 'pglite'));
    process.stdout.write(`\n[test services] PostgreSQL at ${redact(databaseUrl)} did not answer: using embedded PGlite\n`);
    process.env.ATC_TEST_DATABASE_URL = embedded.url;
    process.env.ATC_TEST_DATABASE_KIND = 'pglite';
    state.pglite = embedded;
  }

  const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
  if (await redisAnswers(redisUrl)) {
    process.env.ATC_TEST_REDIS_URL = redisUrl;
  } else if (required) {
    throw new Error(`ATC_TEST_REQUIRE_SERVICES=1: Redis at ${redisUrl} did not answer`);
  } else {
    process.stdout.write(`\n[test services] Redis at ${redisUrl} did not answer: using the in-memory cache\n`);
    process.env.ATC_TEST_REDIS_URL = '';
  }

  const s3 = await startS3Server(path.join(workDir, 's3'));
  process.env.ATC_TEST_S3_ENDPOINT = s3.endpoint;
  process.env.ATC_TEST_RUN_ID = runId;
  process.env.ATC_TEST_WORK_DIR = workDir;
  state.s3 = s3;
  (globalThis as Record<string, unknown>).__ATC_TEST_STATE__ = state;
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]+@/, '//$1:***@');
}
