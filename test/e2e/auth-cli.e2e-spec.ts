import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { freshDatabaseUrl } from '../harness/database';
import { http } from '../harness/http';
import { freePort } from '../harness/ports';
import { startTestSystem, TestSystem } from '../harness/system';

jest.setTimeout(60000);

const ROOT = path.resolve(__dirname, '../..');
const CLI = path.join(ROOT, 'dist/src/cli.js');
const MAIN = path.join(ROOT, 'dist/src/main.js');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function cli(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH!, LOG_LEVEL: 'warn', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const workDir = (name: string) => fs.mkdtempSync(path.join(process.env.ATC_TEST_WORK_DIR ?? '/tmp', `${name}-`));

beforeAll(() => {
  if (!fs.existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` first (npm test does)`);
});

describe('CLI help and usage, as a shell sees them', () => {
  it('answers --help on every command with exit 0, and an unknown command with exit 2 and a message', async () => {
    for (const args of [['--help'], ['token', '--help'], ['token', 'create', '--help'], ['help', 'token']]) {
      const help = await cli(args, {});
      expect({ args, code: help.code }).toEqual({ args, code: 0 });
      expect(help.stdout).toContain('Usage: npm run cli --');
    }
    const unknown = await cli(['token', 'rotate'], {});
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown command 'rotate'");
  });
});

describe('operator token CLI against PostgreSQL (DATABASE_URL)', () => {
  let env: Record<string, string>;
  let system: TestSystem;
  const whoami = (token: string) => http('GET', `${system.controllerUrl}/api/v1/auth/whoami/`, { headers: { authorization: `Token ${token}` } });

  beforeAll(async () => {
    env = { DATABASE_URL: await freshDatabaseUrl(), DATA_DIR: workDir('cli') };
    system = await startTestSystem({ role: 'controller', databaseUrl: env.DATABASE_URL });
  });
  afterAll(() => system?.close());

  it('creates a token, printed once on stdout, that works as an operator token', async () => {
    const created = await cli(['token', 'create', '--name', 'alice'], env);
    expect(created.code).toBe(0);
    const token = created.stdout.trim();
    expect(token).toMatch(/^atc_op_[A-Za-z0-9_-]{43}$/);
    expect(created.stderr).toContain('shown only this once');
    const me = await whoami(token);
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ kind: 'operator', name: 'alice' });

    const listed = await cli(['token', 'list'], env);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/NAME\s+CREATED\s+LAST USED\s+STATUS/);
    expect(listed.stdout).toMatch(new RegExp(`${me.body.id}\\s+alice\\s+\\S+\\s+\\d{4}-\\S+\\s+active`));
    expect(listed.stdout).not.toContain(token);
  });

  it('refuses a second live token of the same name', async () => {
    await cli(['token', 'create', '--name', 'bob'], env);
    const again = await cli(['token', 'create', '--name', 'bob'], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('exists already');
  });

  it('revokes by name and by id; a revoked token is refused at once', async () => {
    const carol = (await cli(['token', 'create', '--name=carol'], env)).stdout.trim();
    const dave = (await cli(['token', 'create', '--name', 'dave'], env)).stdout.trim();
    const daveId = (await whoami(dave)).body.id;
    expect((await cli(['token', 'revoke', 'carol'], env)).stdout).toContain('Revoked operator token "carol"');
    expect((await cli(['token', 'revoke', daveId], env)).code).toBe(0);
    for (const token of [carol, dave]) {
      const refused = await whoami(token);
      expect(refused.status).toBe(401);
      expect(refused.body.code).toBe('authentication_failed');
    }
    const listed = JSON.parse((await cli(['token', 'list', '--json'], env)).stdout) as Array<Record<string, unknown>>;
    expect(listed.find((item) => item.name === 'carol')).toMatchObject({ revoked: true, revoked_at: expect.any(String) });
    expect(Object.keys(listed[0]).sort()).toEqual(['created_at', 'id', 'last_used_at', 'name', 'revoked', 'revoked_at']);

    const trail = await http('GET', `${system.controllerUrl}/api/v1/audit/?resource_id=${daveId}`, { headers: { authorization: `Token ${system.apiToken}` } });
    expect(trail.body.results.map((row: { action: string; actor: unknown; details: unknown }) => [row.action, row.actor, row.details])).toEqual([
      ['cli.tokenRevoke', { kind: 'operator', name: expect.stringMatching(/^cli:/) }, { name: 'dave' }],
      ['cli.tokenCreate', { kind: 'operator', name: expect.stringMatching(/^cli:/) }, { name: 'dave' }],
    ]);
    expect(trail.text).not.toContain(dave);
  });

  it('says what is wrong: unknown token 1, bad usage 2', async () => {
    const unknown = await cli(['token', 'revoke', 'nobody'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('"nobody" not found');
    const noName = await cli(['token', 'create'], env);
    expect(noName.code).toBe(2);
    expect(noName.stderr).toContain('--name');
    expect((await cli([], env)).stderr).toContain('token create --name');
  });
});

describe('operator token CLI in embedded mode (no DATABASE_URL)', () => {
  let server: ChildProcess | undefined;
  afterAll(() => server?.kill('SIGKILL'));

  it('opens the embedded database itself, and refuses clearly while the server holds it', async () => {
    const env = { DATA_DIR: workDir('cli-embedded') };
    const created = await cli(['token', 'create', '--name', 'eve'], env);
    expect(created.code).toBe(0);
    const token = created.stdout.trim();

    const port = await freePort();
    server = spawn(process.execPath, [MAIN], {
      env: { PATH: process.env.PATH!, ...env, ROLE: 'controller', CONTROLLER_PORT: String(port), LOG_LEVEL: 'warn' },
      stdio: 'ignore',
    });
    const whoami = `http://127.0.0.1:${port}/api/v1/auth/whoami/`;
    const deadline = Date.now() + 40000;
    let status = 0;
    while (status !== 200 && Date.now() < deadline) {
      status = await http('GET', whoami, { headers: { authorization: `Token ${token}` } }).then((a) => a.status, () => 0);
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(status).toBe(200);

    const locked = await cli(['token', 'list'], env);
    expect(locked.code).toBe(3);
    expect(locked.stderr).toContain(`is in use by process ${server.pid}`);
    expect(locked.stderr).toContain('stop that process first, or set DATABASE_URL');

    const exited = new Promise((resolve) => server!.once('exit', resolve));
    server.kill('SIGTERM');
    await exited;
    server = undefined;
    const listed = await cli(['token', 'list'], env);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/eve\s+\S+\s+\d{4}-\S+\s+active/);
  }, 90000);
});
