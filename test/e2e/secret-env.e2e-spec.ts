import { ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Client } from 'pg';
import { createTask, operator } from '../harness/controller-tasks';
import { http } from '../harness/http';
import { makeTaskRequest, waitFor } from '../harness/dispatcher';
import { testEnv } from '../harness/system';

jest.setTimeout(90_000);

const MAIN = path.resolve(__dirname, '../../dist/src/main.js');
const SECRET_VALUE = `s3cr3t-${randomBytes(12).toString('hex')}`;
// The agent prints a digest of the variable, never the value, then exits.
const PRINTS_DIGEST = "node -e console.log(require('crypto').createHash('sha256').update(process.env.FORGE_TOKEN??'').digest('hex'))";

/** Every row of a schema's tables as text that holds `needle`, by table. */
async function rowsHolding(databaseUrl: string, schema: string, needle: string): Promise<Record<string, number>> {
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const tables = await db.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = $1`, [schema]);
    const found: Record<string, number> = {};
    for (const { table_name: table } of tables.rows) {
      const rows = await db.query(`SELECT count(*)::int AS n FROM "${schema}"."${table}" t WHERE t::text LIKE $1`, [`%${needle}%`]);
      if (rows.rows[0].n > 0) found[table] = rows.rows[0].n;
    }
    return found;
  } finally {
    await db.end();
  }
}

describe('secret_env: agent credentials by reference', () => {
  let child: ChildProcess;
  let output = '';
  let env: Record<string, string | undefined>;
  const controller = () => `http://127.0.0.1:${env.CONTROLLER_PORT}`;
  const dispatcher = () => `http://127.0.0.1:${env.DISPATCHER_PORT}`;
  const system = () => ({ controllerUrl: controller(), apiToken: env.API_TOKEN! }) as never;

  beforeAll(async () => {
    env = await testEnv();
    const secretsFile = path.join(env.DATA_DIR!, 'agent-secrets.yaml');
    fs.writeFileSync(secretsFile, `forge-credentials:\n  token: ${SECRET_VALUE}\n`);
    Object.assign(env, {
      LOG_LEVEL: 'debug', LOG_FORMAT: 'json', AGENT_SECRETS_FILE: secretsFile, AGENT_SECRET_ALLOWLIST: 'forge-*,db',
      LOCAL_IMAGE_COMMANDS: JSON.stringify({ 'test/prints-digest': PRINTS_DIGEST }),
    });
    child = spawn(process.execPath, [MAIN], { env: { PATH: process.env.PATH, ...env } as Record<string, string>, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (chunk) => (output += chunk));
    child.stderr!.on('data', (chunk) => (output += chunk));
    await waitFor(() => fetch(`${dispatcher()}/health`).then((answer) => answer.ok, () => false), 40_000, 'the system to answer');
  });
  afterAll(async () => {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  });

  it('gives the agent the value while the task, both views, both databases and the logs hold the reference only', async () => {
    const created = await createTask(system(), {
      agent_image: 'test/prints-digest', env: {}, brief: {}, secret_env: { FORGE_TOKEN: 'forge-credentials/token' },
    });
    expect(created.status).toBe(201);
    expect(created.body.secret_env).toEqual({ FORGE_TOKEN: 'forge-credentials/token' });
    const guid = created.body.guid;
    const logs = await waitFor(async () => {
      const answer = await http('GET', `${controller()}/api/v1/tasks/${guid}/logs/`, { headers: operator(system()) });
      return answer.status === 200 && /[0-9a-f]{64}/.test(answer.text) ? answer.text : null;
    }, 30_000, 'the agent output');
    expect(logs.trim()).toBe(createHash('sha256').update(SECRET_VALUE).digest('hex'));

    const onDispatcher = await http('GET', `${dispatcher()}/tasks/${guid}`, { headers: { 'x-api-key': env.API_KEY! } });
    expect(onDispatcher.body.data.secret_env).toEqual({ FORGE_TOKEN: 'forge-credentials/token' });
    expect(onDispatcher.text).not.toContain(SECRET_VALUE);
    expect((await http('GET', `${controller()}/api/v1/tasks/${guid}/`, { headers: operator(system()) })).text).not.toContain(SECRET_VALUE);
    expect(await rowsHolding(env.DATABASE_URL!, 'dispatcher', SECRET_VALUE)).toEqual({});
    expect(await rowsHolding(env.DATABASE_URL!, 'controller', SECRET_VALUE)).toEqual({});
    expect(await rowsHolding(env.DATABASE_URL!, 'dispatcher', 'forge-credentials/token')).toHaveProperty('tasks', 1);
    expect(output).toContain('Agent submitted');
    expect(output).not.toContain(SECRET_VALUE);
  });

  it('refuses a reference outside AGENT_SECRET_ALLOWLIST at POST /tasks, naming the setting', async () => {
    const refused = await http('POST', `${dispatcher()}/tasks`, {
      headers: { 'x-api-key': env.API_KEY! },
      json: makeTaskRequest({ agent_image: 'test/prints-digest', secret_env: { DB_PASSWORD: 'db/password', HELM: 'sh.helm.release.v1.app.v1/release' } }),
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('invalid');
    expect(refused.body.error.details.fields).toEqual({ 'secret_env.HELM': [expect.stringContaining('AGENT_SECRET_ALLOWLIST')] });
    const malformed = await http('POST', `${dispatcher()}/tasks`, { headers: { 'x-api-key': env.API_KEY! }, json: makeTaskRequest({ secret_env: { X: 'no-key' } }) });
    expect(malformed.status).toBe(400);
    const controllerRefusal = await createTask(system(), { secret_env: { 'BAD NAME': 'forge-x/y' } });
    expect(controllerRefusal.status).toBe(400);
    expect(controllerRefusal.body.errors).toHaveProperty('secret_env');
  });

  it('fails a task whose reference is allowed but missing from AGENT_SECRETS_FILE, naming the reference', async () => {
    const request = makeTaskRequest({ agent_image: 'test/prints-digest', secret_env: { FORGE_TOKEN: 'forge-other/token' } });
    expect((await http('POST', `${dispatcher()}/tasks`, { headers: { 'x-api-key': env.API_KEY! }, json: request })).status).toBe(201);
    const failed = await waitFor(async () => {
      const answer = await http('GET', `${dispatcher()}/tasks/${request.task_id}`, { headers: { 'x-api-key': env.API_KEY! } });
      return answer.body.data.status === 'failed' ? answer.body.data : null;
    }, 20_000, 'the task to fail');
    expect(failed.error_message).toContain('"forge-other/token" is not in AGENT_SECRETS_FILE');
  });
});
