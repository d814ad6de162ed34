import * as fs from 'node:fs';
import * as path from 'node:path';
import { AddressInfo } from 'node:net';
import { lockDataFolder } from './data-dir-lock';

export interface EmbeddedPostgres {
  url: string;
  stop(): Promise<void>;
}

/**
 * PostgreSQL without a server: PGlite keeps its files under `<dataDir>/pg` and
 * pglite-socket speaks the wire protocol on a loopback port, so `pg` and TypeORM work
 * unchanged. PGlite runs one query at a time; callers keep their pools at one
 * connection and hold no transaction across a network call.
 */
export async function startEmbeddedPostgres(dataDir: string, port = 0): Promise<EmbeddedPostgres> {
  const { PGlite, PGLiteSocketServer } = await loadPglite();
  const folder = path.join(dataDir, 'pg');
  fs.mkdirSync(folder, { recursive: true });
  // Two processes writing one PGlite folder corrupt it (the server and the CLI, say).
  const unlock = lockDataFolder(path.join(dataDir, 'pg.lock'), folder);
  const db = await PGlite.create(folder).catch((error: unknown) => {
    unlock();
    throw error;
  });
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port, maxConnections: 16 });
  await server.start().catch(async (error: unknown) => {
    await db.close().catch(() => undefined);
    unlock();
    throw error;
  });
  const address = (server as unknown as { server?: { address(): AddressInfo } }).server?.address();
  const boundPort = address?.port ?? port;
  return {
    url: `postgres://postgres@127.0.0.1:${boundPort}/postgres`,
    async stop() {
      await server.stop();
      await db.close();
      unlock();
    },
  };
}

/**
 * PGlite is an optional dependency: the production image leaves it out (it is for local
 * use, and large). Without it, embedded mode says what to do instead of a module error.
 */
export async function loadPglite(load = (name: string) => import(name)) {
  try {
    const { PGlite } = (await load('@electric-sql/pglite')) as typeof import('@electric-sql/pglite');
    const { PGLiteSocketServer } = (await load('@electric-sql/pglite-socket')) as typeof import('@electric-sql/pglite-socket');
    return { PGlite, PGLiteSocketServer };
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') throw error;
    throw new Error(
      'DATABASE_URL is not set and the embedded PostgreSQL (@electric-sql/pglite, an optional dependency) is not installed here: '
        + 'set DATABASE_URL to a PostgreSQL server, or install the optional dependencies (npm ci without --omit=optional) for embedded mode.',
    );
  }
}
