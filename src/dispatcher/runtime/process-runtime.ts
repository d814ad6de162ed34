import { LocalSecrets } from './local-secrets';
import { findProjectRoot } from '../../shared/config/project-root';
import { ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, existsSync, promises as fs, WriteStream } from 'node:fs';
import { constants as osConstants } from 'node:os';
import * as path from 'node:path';
import { AppConfig } from '../../shared/config/config';
import { lastLines, OutputTail } from './output-tail';
import { AgentSpec, AgentState, AgentStateListener, ManagedAgent, RuntimeBackend } from './runtime';

/** The bundled example agents, runnable from the build output without any container engine. */
export const DEFAULT_IMAGE_COMMANDS: Record<string, string> = {
  'agent-examples/echo': 'node dist/src/examples/echo.js',
  'agent-examples/fail': 'node dist/src/examples/fail.js',
  'agent-examples/sleep': 'node dist/src/examples/sleep.js',
  'agent-examples/crash': 'node dist/src/examples/crash.js',
};

const OUTPUT_LIMIT = 1024 * 1024;
const STOP_GRACE_MS = 10_000;
const CLOSE_GRACE_MS = 3_000;
/** Only these of the dispatcher's own environment reach an agent: never its secrets. */
const INHERITED_ENV = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TZ', 'TMPDIR', 'SYSTEMROOT'];

interface ChildAgent {
  taskId: string;
  child: ChildProcess;
  ref: string;
  output: OutputTail;
  logFile: string;
  log: WriteStream;
  exitCode?: number;
  exited: Promise<void>;
}

/**
 * The `local` backend with LOCAL_ENGINE=process: each agent is a child process whose
 * command comes from LOCAL_IMAGE_COMMANDS (run without a shell, in the project root).
 * Output is kept in memory (last 1 MiB) and in `<DATA_DIR>/agent-logs/<task>.log`, so
 * logs outlive the process and the dispatcher.
 */
export class ProcessRuntime implements RuntimeBackend {
  readonly name = 'local' as const;
  readonly hostLocal = true;
  private readonly commands: Record<string, string>;
  private readonly logDir: string;
  private readonly agents = new Map<string, ChildAgent>();
  private readonly listeners: AgentStateListener[] = [];
  /** The log folder is made once, not before every start; a failure is tried again next time. */
  private logDirReady?: Promise<unknown>;
  private closing = false;

  private readonly secrets: LocalSecrets;

  constructor(config: Pick<AppConfig, 'localImageCommands' | 'dataDir'> & { agentSecretsFile?: string | null }, private readonly projectRoot = findProjectRoot()) {
    this.commands = { ...DEFAULT_IMAGE_COMMANDS, ...config.localImageCommands };
    this.secrets = new LocalSecrets(config.agentSecretsFile ?? null);
    this.logDir = agentLogDir(config.dataDir);
  }

  commandFor(image: string): string | undefined {
    const untagged = image.replace(/:[^/:]+$/, '');
    return this.commands[image] ?? this.commands[untagged];
  }

  validate(spec: Pick<AgentSpec, 'image'>): Record<string, string[]> {
    if (this.commandFor(spec.image)) return {};
    return { agent_image: [`no command is mapped for image "${spec.image}" (LOCAL_IMAGE_COMMANDS; mapped: ${Object.keys(this.commands).join(', ')})`] };
  }

  async submit(spec: AgentSpec): Promise<string> {
    const command = this.commandFor(spec.image);
    if (!command) throw new Error(`no command is mapped for image ${spec.image}`);
    const secretValues = await this.secrets.resolve(spec.secretEnv ?? {});
    const [file, ...args] = command.trim().split(/\s+/);
    this.logDirReady ??= fs.mkdir(this.logDir, { recursive: true }).catch((error: unknown) => {
      this.logDirReady = undefined;
      throw error;
    });
    await this.logDirReady;
    const child = spawn(file === 'node' ? process.execPath : file, args, {
      cwd: this.projectRoot,
      env: { ...inheritedEnv(), ...spec.env, ...secretValues },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const spawned = new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
    // Watched before anything is awaited: a quick command can be over in the meantime.
    const agent = this.track(spec.taskId, child, spawned);
    await spawned.catch((error: unknown) => {
      this.agents.delete(spec.taskId);
      throw error;
    });
    return agent.ref;
  }

  private track(taskId: string, child: ChildProcess, spawned: Promise<void>): ChildAgent {
    const logFile = this.logFileOf(taskId);
    const output = new OutputTail(OUTPUT_LIMIT);
    const log = createWriteStream(logFile, { flags: 'a' });
    log.on('error', () => undefined);
    const keep = (chunk: Buffer) => {
      output.append(chunk);
      log.write(chunk);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    const agent: ChildAgent = { taskId, child, ref: String(child.pid), output, logFile, log, exited: Promise.resolve() };
    agent.exited = new Promise((resolve) => {
      child.once('close', (code, signal) => {
        agent.exitCode = code ?? 128 + (signal ? (osConstants.signals[signal] ?? 0) : 0);
        log.end(() => void this.trimLog(agent).finally(resolve));
        const state: AgentState = { phase: 'exited', exitCode: agent.exitCode, ...(signal ? { reason: `killed by ${signal}` } : {}) };
        // A command that never started is reported by submit's rejection, not as an exit.
        spawned.then(() => !this.closing && this.emit(taskId, state), () => this.agents.delete(taskId));
      });
    });
    this.agents.set(taskId, agent);
    return agent;
  }

  async stop(taskId: string, ref: string): Promise<void> {
    const agent = this.agents.get(taskId);
    if (agent && agent.ref === ref) {
      if (agent.exitCode !== undefined) return;
      agent.child.kill('SIGTERM');
      const killer = setTimeout(() => agent.child.kill('SIGKILL'), STOP_GRACE_MS);
      await agent.exited;
      clearTimeout(killer);
      return;
    }
    await stopPid(Number(ref));
  }

  async status(taskId: string, ref: string): Promise<AgentState> {
    const agent = this.agents.get(taskId);
    if (agent && agent.ref === ref) {
      return agent.exitCode === undefined ? { phase: 'running' } : { phase: 'exited', exitCode: agent.exitCode };
    }
    if (isAlive(Number(ref))) return { phase: 'running' };
    return { phase: 'gone', message: `The agent process ${ref} is gone (it ended while the dispatcher was not watching it) and the task never checked back.` };
  }

  async logs(taskId: string, _ref: string, tail?: number): Promise<string> {
    const agent = this.agents.get(taskId);
    if (agent) return lastLines(agent.output.toBuffer().toString('utf8'), tail);
    const file = this.logFileOf(taskId);
    if (!existsSync(file)) return '';
    return lastLines((await readTail(file, OUTPUT_LIMIT)).toString('utf8'), tail);
  }

  async remove(taskId: string, _ref?: string): Promise<void> {
    const agent = this.agents.get(taskId);
    if (agent && agent.exitCode !== undefined) {
      await agent.exited;
      this.agents.delete(taskId);
    }
  }

  async listManaged(): Promise<ManagedAgent[]> {
    return Promise.all([...this.agents.values()].map(async (agent) => ({ taskId: agent.taskId, ref: agent.ref, state: await this.status(agent.taskId, agent.ref) })));
  }

  onStateChange(listener: AgentStateListener): void {
    this.listeners.push(listener);
  }

  async ping(): Promise<void> {
    // Child processes need nothing but this process.
  }

  /** Stops every agent this process started: their output pipes end with it anyway. */
  async close(): Promise<void> {
    this.closing = true;
    const live = [...this.agents.values()].filter((agent) => agent.exitCode === undefined);
    for (const agent of live) agent.child.kill('SIGTERM');
    const killer = setTimeout(() => live.forEach((agent) => agent.child.kill('SIGKILL')), CLOSE_GRACE_MS);
    await Promise.all(live.map((agent) => agent.exited));
    clearTimeout(killer);
    this.listeners.length = 0;
  }

  private emit(taskId: string, state: AgentState): void {
    for (const listener of this.listeners) listener(taskId, state);
  }

  private logFileOf(taskId: string): string {
    return path.join(this.logDir, `${taskId.replace(/[^0-9a-zA-Z-]/g, '')}.log`);
  }

  private async trimLog(agent: ChildAgent): Promise<void> {
    const stats = await fs.stat(agent.logFile).catch(() => null);
    if (stats && stats.size > OUTPUT_LIMIT) await fs.writeFile(agent.logFile, agent.output.toBuffer()).catch(() => undefined);
  }
}

function inheritedEnv(): Record<string, string> {
  return Object.fromEntries(INHERITED_ENV.filter((name) => process.env[name] !== undefined).map((name) => [name, process.env[name]!]));
}

function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** SIGTERM, then SIGKILL after the grace, for a process this dispatcher no longer holds. */
async function stopPid(pid: number): Promise<void> {
  if (!isAlive(pid)) return;
  process.kill(pid, 'SIGTERM');
  const until = Date.now() + STOP_GRACE_MS;
  while (isAlive(pid) && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 200));
  if (isAlive(pid)) process.kill(pid, 'SIGKILL');
}

async function readTail(file: string, bytes: number): Promise<Buffer> {
  const handle = await fs.open(file, 'r');
  try {
    const { size } = await handle.stat();
    const length = Math.min(size, bytes);
    const buffer = Buffer.alloc(length);
    await handle.read(buffer, 0, length, size - length);
    return buffer;
  } finally {
    await handle.close();
  }
}

/** Where process agents' output is kept, one `<task>.log` each. */
export function agentLogDir(dataDir: string): string {
  return path.join(dataDir, 'agent-logs');
}
