import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { freshDatabaseUrl } from '../harness/database';
import { freePort } from '../harness/ports';
import { waitFor } from '../harness/wait';

jest.setTimeout(90_000);

const MAIN = path.resolve(__dirname, '../../dist/src/main.js');
/** Colour escapes (ESC [ ... m), as a terminal receives them. */
const COLOUR = `${String.fromCharCode(27)}\\[[0-9;]*m`;
const ANSI = new RegExp(COLOUR, 'g');
const HAS_COLOUR = new RegExp(COLOUR);

interface Started {
  child: ChildProcess;
  raw: () => string;
  /** The output as a person reads it: no colours, no carriage returns. */
  text: () => string;
  controllerUrl: string;
  dataDir: string;
  exited: Promise<number | null>;
  stop: () => Promise<void>;
}

/**
 * The built server with the given settings; `tty` runs it under `script` (util-linux), so
 * its stdout is a pseudo-terminal as in a person's shell, else stdout is a pipe.
 */
async function start(env: Record<string, string>, tty: boolean): Promise<Started> {
  const [controllerPort, dispatcherPort] = [await freePort(), await freePort()];
  const dataDir = fs.mkdtempSync(path.join(process.env.ATC_TEST_WORK_DIR ?? '/tmp', 'terminal-'));
  const pidFile = path.join(dataDir, 'server.pid');
  const settings = {
    PATH: process.env.PATH!, DATABASE_URL: await freshDatabaseUrl(), DATA_DIR: dataDir, LOG_LEVEL: 'info',
    CONTROLLER_PORT: String(controllerPort), DISPATCHER_PORT: String(dispatcherPort), ...env,
  };
  const command = `echo $$ > '${pidFile}'; exec '${process.execPath}' '${MAIN}'`;
  const child = tty
    ? spawn('script', ['-q', '-e', '-c', command, '/dev/null'], { env: settings, stdio: ['pipe', 'pipe', 'pipe'] })
    : spawn('sh', ['-c', command], { env: settings, stdio: ['ignore', 'pipe', 'pipe'] });
  let raw = '';
  child.stdout!.on('data', (chunk: Buffer) => (raw += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (raw += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const stop = async () => {
    if (child.exitCode === null && fs.existsSync(pidFile)) process.kill(Number(fs.readFileSync(pidFile, 'utf8')), 'SIGTERM');
    await exited;
  };
  return { child, raw: () => raw, text: () => raw.replace(ANSI, '').replace(/\r/g, ''), controllerUrl: `http://127.0.0.1:${controllerPort}`, dataDir, exited, stop };
}

async function bootEnds(server: Started, lastLine: RegExp): Promise<void> {
  await waitFor(async () => {
    if (server.child.exitCode !== null) throw new Error(`the server exited:\n${server.text()}`);
    return lastLine.test(server.text());
  }, 60_000, 'the boot to end', 100);
}

describe('what a person sees in a terminal', () => {
  let server: Started | undefined;
  afterEach(() => server?.stop());

  it('shows pretty lines, the docs, where the operator token is and the demo command', async () => {
    server = await start({ ROLE: 'all' }, true);
    await bootEnds(server, /npm run demo/);
    await fetch(`${server.controllerUrl}/api/v1/tasks/`);
    await waitFor(async () => /GET \/api\/v1\/tasks\/ 401/.test(server!.text()), 10_000, 'the access line');

    const text = server.text();
    const secretsFile = path.join(server.dataDir, 'secrets.json');
    expect(text).toContain(`controller Boot: controller listening on ${server.controllerUrl}`);
    expect(text).toContain(`Boot: API docs: ${server.controllerUrl}/api/docs (controller)`);
    expect(text).toMatch(/Boot: API docs: http:\/\/127\.0\.0\.1:\d+\/api\/docs \(dispatcher\)/);
    expect(text).toContain(`Boot: Operator token: API_TOKEN in ${secretsFile}`);
    expect(text).toContain(`Boot: Try it: CONTROLLER_URL=${server.controllerUrl} DATA_DIR=${server.dataDir} npm run demo`);
    expect(text).toMatch(/\] INFO: controller GET \/api\/v1\/tasks\/ 401 [\d.]+ ms/);
    expect(text.split('\n').filter((line) => line.startsWith('{'))).toEqual([]);
    expect(server.raw()).toMatch(HAS_COLOUR);
    const token = (JSON.parse(fs.readFileSync(secretsFile, 'utf8')) as Record<string, string>).API_TOKEN;
    expect(text).not.toContain(token);
  });

  it('writes JSON lines when stdout is not a terminal, the boot lines included', async () => {
    server = await start({ ROLE: 'controller' }, false);
    await bootEnds(server, /npm run demo/);
    const records = server.text().trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records.map((record) => record.msg)).toEqual(expect.arrayContaining([
      `API docs: ${server.controllerUrl}/api/docs (controller)`,
      `Operator token: API_TOKEN in ${path.join(server.dataDir, 'secrets.json')}`,
    ]));
    expect(records.find((record) => String(record.msg).startsWith('Try it:'))).toMatchObject({ level: 'info', context: 'Boot' });
  });

  it('follows LOG_FORMAT over the terminal check, and refuses a format it does not know', async () => {
    server = await start({ ROLE: 'controller', LOG_FORMAT: 'pretty' }, false);
    await bootEnds(server, /npm run demo/);
    expect(server.raw()).toMatch(/\] INFO: Boot: Operator token: API_TOKEN in /);
    expect(server.raw()).not.toMatch(HAS_COLOUR);
    await server.stop();

    server = await start({ ROLE: 'controller', LOG_FORMAT: 'loud' }, false);
    expect(await server.exited).toBe(2);
    expect(server.text()).toContain('LOG_FORMAT');
  });
});
