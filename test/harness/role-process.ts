import { ChildProcess, spawn } from 'node:child_process';
import * as path from 'node:path';
import { waitFor } from './wait';

const MAIN = path.resolve(__dirname, '../../dist/src/main.js');

/** The built server as a child process with the given settings, started again on demand, killable at any moment. */
export class RoleProcess {
  private child?: ChildProcess;

  constructor(private readonly env: Record<string, string | undefined>, private readonly healthUrl: string) {}

  async start(): Promise<this> {
    const env = Object.fromEntries(Object.entries({ PATH: process.env.PATH, ...this.env }).filter(([, value]) => value !== undefined)) as Record<string, string>;
    this.child = spawn(process.execPath, [MAIN], { env, stdio: 'ignore' });
    await waitFor(async () => {
      if (this.child?.exitCode !== null) throw new Error(`the server exited with ${this.child?.exitCode}`);
      return fetch(this.healthUrl).then((answer) => answer.ok, () => false);
    }, 40_000, `${this.healthUrl} to answer`, 100);
    return this;
  }

  /** SIGKILL: no shutdown hook runs, as when a node dies. */
  kill(): Promise<void> {
    return this.signal('SIGKILL');
  }

  stop(): Promise<void> {
    return this.signal('SIGTERM');
  }

  private async signal(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    // A child killed by a signal has no exit code, only its signal.
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill(signal);
    await exited;
  }
}
