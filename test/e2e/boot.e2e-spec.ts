import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { http } from '../harness/http';
import { freePort } from '../harness/ports';

const MAIN = path.resolve(__dirname, '../../dist/src/main.js');

function boot(env: Record<string, string>, args: string[] = []) {
  return spawnSync(process.execPath, [MAIN, ...args], { env: { PATH: process.env.PATH!, ...env }, encoding: 'utf8', timeout: 30000 });
}

async function waitFor(url: string, timeoutMs = 40000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const status = await http('GET', url).then((answer) => answer.status, () => 0);
    if (status === 200) return status;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`${url} did not answer 200 within ${timeoutMs} ms`);
}

beforeAll(() => {
  if (!fs.existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npm run build\` first (npm test does)`);
});

describe('boot', () => {
  it('stops at once with a one-line message for an unknown role', () => {
    const result = boot({ ROLE: 'worker' });
    expect(result.status).toBe(2);
    expect(result.stderr).toBe('Invalid configuration: ROLE (or --role) must be one of controller, dispatcher, all (got "worker")\n');
    expect(boot({}, ['--role', 'nope']).stderr).toContain('(got "nope")');
  });

  it('refuses to boot in production without its secrets, naming each', () => {
    const result = boot({ NODE_ENV: 'production', ROLE: 'dispatcher' });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('API_KEY is required when NODE_ENV=production');
    expect(result.stderr).toContain('AGENT_KEY is required when NODE_ENV=production');
  });

  it('runs with embedded defaults and keeps its data and secrets across a restart', async () => {
    const dataDir = fs.mkdtempSync(path.join(process.env.ATC_TEST_WORK_DIR!, 'embedded-'));
    const env = {
      PATH: process.env.PATH!,
      DATA_DIR: dataDir,
      CONTROLLER_PORT: String(await freePort()),
      DISPATCHER_PORT: String(await freePort()),
      LOG_LEVEL: 'warn',
    };
    const controller = `http://127.0.0.1:${env.CONTROLLER_PORT}`;
    const start = () => spawn(process.execPath, [MAIN], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const stop = (child: ReturnType<typeof start>) =>
      new Promise<number | null>((resolve) => {
        child.once('exit', (code) => resolve(code));
        child.kill('SIGTERM');
      });

    const first = start();
    let output = '';
    first.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    await waitFor(`${controller}/health/`);
    await waitFor(`http://127.0.0.1:${env.DISPATCHER_PORT}/health`);
    const secrets = JSON.parse(fs.readFileSync(path.join(dataDir, 'secrets.json'), 'utf8')) as Record<string, string>;
    expect(output).toContain(`the values are kept in ${path.join(dataDir, 'secrets.json')}`);
    expect(output).not.toContain(secrets.API_TOKEN);
    const auth = { authorization: `Token ${secrets.API_TOKEN}` };
    const created = await http('POST', `${controller}/api/v1/skills/`, {
      json: { name: 'Kept Across Restarts', category: 'tool', description: 'persists' },
      headers: auth,
    });
    expect(created.status).toBe(201);
    expect(await stop(first)).toBe(0);

    const second = start();
    try {
      await waitFor(`${controller}/health/`);
      // Both roles up before the stop: a signal that comes while one is still booting is not a clean exit.
      await waitFor(`http://127.0.0.1:${env.DISPATCHER_PORT}/health`);
      const skills = await http('GET', `${controller}/api/v1/skills/`, { headers: auth });
      expect(skills.status).toBe(200);
      expect(skills.body.map((skill: { slug: string }) => skill.slug)).toContain('kept-across-restarts');
      expect(JSON.parse(fs.readFileSync(path.join(dataDir, 'secrets.json'), 'utf8'))).toEqual(secrets);
    } finally {
      expect(await stop(second)).toBe(0);
    }
  }, 120000);
});
