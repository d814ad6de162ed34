import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import { connect } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { freePort } from './ports';
import { waitFor } from './wait';

const PROJECT_ROOT = path.resolve(__dirname, '../..');

/**
 * A dependency's real server in a child process of its own, on a loopback port of its own:
 * SIGKILLed as a crashed server is, and started again on the same port (and data folder).
 */
export class KillableServer {
  private child?: ChildProcess;

  constructor(readonly port: number, private readonly command: string, private readonly args: string[]) {}

  async start(): Promise<this> {
    const child = spawn(this.command, this.args, { cwd: PROJECT_ROOT, stdio: 'ignore' });
    this.child = child;
    await waitFor(async () => {
      if (child.exitCode !== null) throw new Error(`${this.command} exited with ${child.exitCode}`);
      return accepts(this.port);
    }, 20_000, `${this.command} on port ${this.port}`, 50);
    return this;
  }

  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** A private redis-server with nothing kept on disk. */
export async function privateRedis(): Promise<KillableServer & { url: string }> {
  const port = await freePort();
  const server = new KillableServer(port, 'redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no']);
  return Object.assign(await server.start(), { url: `redis://127.0.0.1:${port}` });
}

/** A private s3rver whose buckets and objects live in a folder that outlives its restarts. */
export async function privateS3(): Promise<KillableServer & { endpoint: string }> {
  const port = await freePort();
  const folder = fs.mkdtempSync(path.join(process.env.ATC_TEST_WORK_DIR ?? os.tmpdir(), 's3-private-'));
  const script = `const S3rver = require('s3rver');
    new S3rver({ port: ${port}, address: '127.0.0.1', silent: true, directory: ${JSON.stringify(folder)} }).run();`;
  const server = new KillableServer(port, process.execPath, ['-e', script]);
  return Object.assign(await server.start(), { endpoint: `http://127.0.0.1:${port}` });
}
