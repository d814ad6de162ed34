import { Client } from 'pg';
import Redis from 'ioredis';

/** What the global setup found or started, passed to test workers through the environment. */
export interface TestServices {
  databaseUrl: string;
  databaseKind: 'postgres' | 'pglite';
  redisUrl: string | null;
  s3Endpoint: string;
  runId: string;
}

export function testServices(): TestServices {
  const env = process.env;
  if (!env.ATC_TEST_DATABASE_URL || !env.ATC_TEST_S3_ENDPOINT || !env.ATC_TEST_RUN_ID) {
    throw new Error('Test services are missing: run the specs through jest (globalSetup starts them)');
  }
  return {
    databaseUrl: env.ATC_TEST_DATABASE_URL,
    databaseKind: env.ATC_TEST_DATABASE_KIND === 'pglite' ? 'pglite' : 'postgres',
    redisUrl: env.ATC_TEST_REDIS_URL || null,
    s3Endpoint: env.ATC_TEST_S3_ENDPOINT,
    runId: env.ATC_TEST_RUN_ID,
  };
}

export async function postgresAnswers(url: string): Promise<boolean> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

export async function redisAnswers(url: string): Promise<boolean> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 1000, retryStrategy: () => null });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}
