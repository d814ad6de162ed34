import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from 'pg';
import { MIGRATION_CHECKSUMS } from '../../src/controller/migrations/checksums';
import { freshDatabaseUrl } from '../harness/database';

/**
 * A landed migration never changes. CI compares every migration file with the committed
 * checksum list, and the built server, like Flyway, refuses to start on a database whose
 * recorded checksum for an applied migration differs from the file's, naming the file.
 */
const ROOT = path.resolve(__dirname, '../..');
const SCRIPT = path.join(ROOT, 'scripts/migration-checksums.mjs');
const MAIN = path.join(ROOT, 'dist/src/main.js');

function checksums(...args: string[]) {
  const run = spawnSync(process.execPath, [SCRIPT, ...args], { encoding: 'utf8' });
  return { status: run.status, output: run.stdout + run.stderr };
}

function server(databaseUrl: string, ...args: string[]) {
  const env = { PATH: process.env.PATH, ROLE: 'controller', DATABASE_URL: databaseUrl, DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'atc-ck-')), LOG_LEVEL: 'warn' };
  const run = spawnSync(process.execPath, [MAIN, ...args], { env, encoding: 'utf8', timeout: 30_000 });
  return { status: run.status, stderr: run.stderr };
}

/** A scratch repository holding a copy of both roles' migrations and their lists. */
function scratchRepository(): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'atc-migrations-'));
  for (const role of ['controller', 'dispatcher']) {
    fs.cpSync(path.join(ROOT, 'src', role, 'migrations'), path.join(root, 'src', role, 'migrations'), { recursive: true });
  }
  return root;
}

describe('the committed migration checksum list', () => {
  it('matches every migration file of both roles', () => {
    expect(checksums()).toEqual({ status: 0, output: expect.stringContaining('every migration file matches') });
  });

  it('asks for a line for a new migration, and --write appends exactly that line', () => {
    const root = scratchRepository();
    const list = path.join(root, 'src/dispatcher/migrations/checksums.ts');
    const before = fs.readFileSync(list, 'utf8');
    fs.writeFileSync(path.join(root, 'src/dispatcher/migrations/1799999999999-AddSomething.ts'), 'export class AddSomething1799999999999 {}\n');

    const check = checksums('--root', root);
    expect(check.status).toBe(1);
    expect(check.output).toContain('src/dispatcher/migrations/1799999999999-AddSomething.ts has no line');

    expect(checksums('--root', root, '--write').status).toBe(0);
    const after = fs.readFileSync(list, 'utf8');
    expect(after.startsWith(before.replace(/};\n$/, ''))).toBe(true);
    expect(after).toMatch(/'1799999999999-AddSomething\.ts': '[0-9a-f]{64}',\n};\n$/);
    expect(checksums('--root', root).status).toBe(0);
  });

  it('fails naming an edited migration, and --write refuses to cover the edit', () => {
    const root = scratchRepository();
    const edited = path.join(root, 'src/controller/migrations/1770000000000-KeysetListIndexes.ts');
    fs.appendFileSync(edited, '// one more line\n');
    const listBefore = fs.readFileSync(path.join(root, 'src/controller/migrations/checksums.ts'), 'utf8');

    for (const args of [[], ['--write']]) {
      const run = checksums('--root', root, ...args);
      expect(run.status).toBe(1);
      expect(run.output).toContain('src/controller/migrations/1770000000000-KeysetListIndexes.ts changed after it landed');
    }
    expect(fs.readFileSync(path.join(root, 'src/controller/migrations/checksums.ts'), 'utf8')).toBe(listBefore);
  });
});

describe('the server at boot', () => {
  let url: string;
  let db: Client;

  beforeAll(async () => {
    url = await freshDatabaseUrl();
    db = new Client({ connectionString: url });
    await db.connect();
  });
  afterAll(() => db.end());

  it('records a checksum for every migration it applies', async () => {
    expect(server(url, '--migrate-only').status).toBe(0);
    const rows = await db.query('SELECT file, sha256 FROM controller.migration_checksums');
    expect(Object.fromEntries(rows.rows.map((row) => [row.file, row.sha256]))).toEqual(MIGRATION_CHECKSUMS);
  });

  it('fills the checksums of a database migrated before they were recorded', async () => {
    await db.query('DROP TABLE controller.migration_checksums');
    expect(server(url, '--migrate-only').status).toBe(0);
    expect((await db.query('SELECT count(*)::int AS n FROM controller.migration_checksums')).rows[0].n).toBeGreaterThan(10);
  });

  it('refuses to start when an applied migration differs from its recorded checksum, naming the file', async () => {
    // As if 1760000000000-TaskPipeline.ts had been applied in another version than the one this build carries.
    await db.query(`UPDATE controller.migration_checksums SET sha256 = repeat('0', 64) WHERE file = '1760000000000-TaskPipeline.ts'`);
    const boot = server(url);
    expect(boot.status).toBe(1);
    expect(boot.stderr).toContain('applied migration 1760000000000-TaskPipeline.ts changed after being applied');
    expect(server(url, '--migrate-only').status).toBe(1);
  });
});
