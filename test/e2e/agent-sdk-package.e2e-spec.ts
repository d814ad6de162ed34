import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { readAll } from '../../src/shared/storage/object-storage';
import { createObjectStorage } from '../../src/shared/storage/storage.module';
import { makeTaskRequest, startCallbackReceiver, taskApi, waitFor, waitForStatus } from '../harness/dispatcher';
import { startTestSystem, TestSystem } from '../harness/system';

const root = path.resolve(__dirname, '../..');
const tsc = path.join(root, 'node_modules/typescript/bin/tsc');

/** The README's complete agent, as a user would copy it. */
function readmeAgent(): string {
  const readme = fs.readFileSync(path.join(root, 'packages/agent-sdk/README.md'), 'utf8');
  const block = /```ts\n([\s\S]*?)```/.exec(readme);
  if (!block) throw new Error('packages/agent-sdk/README.md has no ```ts block');
  return block[1];
}

/** Packs the SDK, installs the tarball into a project outside the repository, compiles the agent there. */
function scratchProject(): string {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-sdk-scratch-'));
  const packed = JSON.parse(execFileSync('npm', ['pack', '--json', '--workspace', '@agent-task/agent-sdk', '--pack-destination', scratch], { cwd: root, encoding: 'utf8' }));
  fs.writeFileSync(path.join(scratch, 'package.json'), JSON.stringify({ name: 'word-count-agent', private: true, type: 'module' }));
  execFileSync('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', `./${packed[0].filename}`], { cwd: scratch, stdio: 'pipe' });
  fs.writeFileSync(path.join(scratch, 'agent.ts'), readmeAgent());
  return scratch;
}

function compile(scratch: string, lib: string, emit: boolean): void {
  const args = ['--module', 'node20', '--target', 'es2022', '--strict', '--lib', lib, '--types', 'node',
    '--typeRoots', path.join(root, 'node_modules/@types'), ...(emit ? ['--outDir', '.'] : ['--noEmit']), 'agent.ts'];
  execFileSync(process.execPath, [tsc, ...args], { cwd: scratch, stdio: 'pipe' });
}

jest.setTimeout(120_000);
describe('the agent SDK as a packed npm package', () => {
  let scratch: string;
  let system: TestSystem;
  let receiver: Awaited<ReturnType<typeof startCallbackReceiver>>;

  beforeAll(async () => {
    scratch = scratchProject();
    receiver = await startCallbackReceiver();
  });
  afterAll(async () => {
    await system?.close();
    await receiver?.close();
    if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
  });

  it('ships ESM with type declarations, only what it needs', () => {
    const installed = path.join(scratch, 'node_modules/@agent-task/agent-sdk');
    const manifest = JSON.parse(fs.readFileSync(path.join(installed, 'package.json'), 'utf8'));
    expect(manifest).toMatchObject({ type: 'module', exports: { '.': { types: './dist/index.d.ts', default: './dist/index.js' } } });
    expect(fs.existsSync(path.join(installed, 'dist/index.d.ts'))).toBe(true);
    expect(fs.readdirSync(path.join(installed, 'dist')).some((file) => file.includes('spec'))).toBe(false);
  });

  it('compiles the README agent with and without the DOM lib', () => {
    expect(() => compile(scratch, 'es2023,dom', false)).not.toThrow();
    expect(() => compile(scratch, 'es2023', true)).not.toThrow();
    expect(fs.existsSync(path.join(scratch, 'agent.js'))).toBe(true);
  });

  it('runs the README agent through a real task to completed, with its result and its last progress', async () => {
    system = await startTestSystem({
      role: 'dispatcher',
      env: { LOCAL_IMAGE_COMMANDS: JSON.stringify({ 'scratch/word-count': `node ${path.join(scratch, 'agent.js')}` }) },
    });
    const storage = createObjectStorage(system.config);
    const request = makeTaskRequest({ agent_image: 'scratch/word-count' });
    request.callback_url = receiver.callbackUrl(request.task_id);
    await storage.put(request.brief_key, Buffer.from(JSON.stringify({ text: 'one two  three' })));
    expect((await taskApi(system).create(request)).status).toBe(201);

    const task = await waitForStatus(system, request.task_id, ['completed', 'failed'], 60_000);
    expect(task).toMatchObject({ status: 'completed', result_key: `results/${request.task_id}/result.json`, result_metadata: { words: 3 } });
    const result = JSON.parse((await readAll((await storage.get(task.result_key))!)).toString());
    expect(result).toEqual({ words: 3 });

    await waitFor(async () => receiver.callbacks().some((r) => r.path.includes(request.task_id)), 15_000, 'the callback');
    const reports = receiver.progress().filter((r) => r.path.includes(request.task_id));
    expect(reports[reports.length - 1].body).toMatchObject({ percentage: 100, message: 'result written' });
  });
});
