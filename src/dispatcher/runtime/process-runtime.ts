import { LocalSecrets } from './local-secrets';
import { findProjectRoot } from '../../shared/config/project-root';
import { closeSync, existsSync, fstatSync, openSync, promises as fs, readSync } from 'node:fs';
import * as path from 'node:path';
import { AppConfig } from '../../shared/config/config';
import { lastLines } from './output-tail';
import { AgentSpec, AgentState, AgentStateListener, ManagedAgent, RuntimeBackend } from './runtime';
import { SpawnerClient } from './spawner-client';
import { exitFileOf, logFileOf, OUTPUT_LIMIT, SpawnedAgent, spawnerSocketPath } from './spawner-protocol';

/** The bundled example agents, runnable from the build output without any container engine. */
export const DEFAULT_IMAGE_COMMANDS: Record<string, string> = {
  'agent-examples/echo': 'node dist/src/examples/echo.js',
  'agent-examples/fail': 'node dist/src/examples/fail.js',
  'agent-examples/sleep': 'node dist/src/examples/sleep.js',
  'agent-examples/crash': 'node dist/src/examples/crash.js',
};

const STOP_GRACE_MS = 10_000;
/** Far more than the agents that end on one replica between their exit and their removal. */
const ENDED_KEPT = 10_000;
/** How often a stop looks again at its agent when no exit is pushed (the spawner went away meanwhile). */
const STOP_POLL_MS = 1_000;
/** Only these of the dispatcher's own environment reach the spawner and the agents: never its secrets. */
const INHERITED_ENV = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TZ', 'TMPDIR', 'SYSTEMROOT'];

/**
 * The `local` backend with LOCAL_ENGINE=process: each agent is a process whose command
 * comes from LOCAL_IMAGE_COMMANDS (run without a shell, in the project root), started by
 * this replica's spawner (`process-spawner.ts`), a small process of its own found again by
 * its socket under DATA_DIR and started anew when it is gone. The agents are the spawner's
 * children, not the server's: they outlive a dispatcher restart, and the restarted
 * dispatcher finds them through the spawner as it finds containers by label. Output goes
 * to `<DATA_DIR>/agent-logs/<task>.log` (its last 1 MiB), how an agent ended to
 * `<task>.exit`, so both outlive the agent, the spawner and the dispatcher.
 */
export class ProcessRuntime implements RuntimeBackend {
  readonly name = 'local' as const;
  readonly hostLocal = true;
  private readonly commands: Record<string, string>;
  private readonly logDir: string;
  private readonly spawner: SpawnerClient;
  private readonly listeners: AgentStateListener[] = [];
  private readonly exitWaiters = new Map<string, (() => void)[]>();
  /**
   * The pid of each agent whose end the spawner pushed, by task, until its removal: a stop of
   * that agent (at the end of most task lives) needs no request. The spawner's record of an
   * ended agent never changes again, and a task's key names one agent (a new spawn forgets it).
   */
  private readonly ended = new Map<string, number>();
  private closing = false;

  private readonly secrets: LocalSecrets;

  constructor(
    config: Pick<AppConfig, 'localImageCommands' | 'dataDir'> & Partial<Pick<AppConfig, 'dispatcherInstance' | 'dispatcherReplicaLostSeconds'>> & { agentSecretsFile?: string | null },
    private readonly projectRoot = findProjectRoot(),
  ) {
    this.commands = { ...DEFAULT_IMAGE_COMMANDS, ...config.localImageCommands };
    this.secrets = new LocalSecrets(config.agentSecretsFile ?? null);
    this.logDir = agentLogDir(config.dataDir);
    const stateDir = path.join(config.dataDir, 'spawner');
    this.spawner = new SpawnerClient(
      {
        socketPath: spawnerSocketPath(stateDir, config.dispatcherInstance ?? 'local'),
        stateDir,
        logDir: this.logDir,
        program: spawnerProgram(projectRoot),
        // Twice the window: a survivor has failed the tasks by then, and a slow restart still finds its agents.
        orphanSeconds: 2 * (config.dispatcherReplicaLostSeconds ?? 60),
        env: inheritedEnv(),
      },
      (agent) => this.exited(agent),
    );
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
    this.ended.delete(spec.taskId);
    const { pid } = await this.spawner.request({
      op: 'spawn', taskId: spec.taskId, file: file === 'node' ? process.execPath : file, args, cwd: this.projectRoot, env: { ...inheritedEnv(), ...spec.env, ...secretValues },
      ...(spec.warm ? { idle: true } : {}),
    });
    return String(pid);
  }

  /**
   * A warm pool's agent takes a task: the spawner gives it back the priority every agent at work
   * has. A spawner of an older build never lowered it, and answers that it knows no such request.
   */
  async claimFor(agentKey: string): Promise<void> {
    await this.spawner.request({ op: 'claim', taskId: agentKey }).catch((error: unknown) => {
      if (!(error instanceof Error && error.message.startsWith('unknown operation'))) throw error;
    });
  }

  /**
   * The spawner sends SIGTERM, then SIGKILL after 10 s; this waits for the end. No request when
   * the spawner has pushed the agent's end, as it has at the end of most task lives; one when
   * the agent ended unseen (while this process was not connected).
   */
  async stop(taskId: string, ref: string): Promise<void> {
    const pid = Number(ref);
    if (this.ended.get(taskId) === pid) return;
    // Listened for before the request: an exit pushed while it is under way is not missed.
    let { exit, cancel } = this.nextExit(taskId);
    const answer = await this.spawner.request({ op: 'stop', taskId, pid });
    const known = answer.agents ? answer.agents.find((agent) => agent.pid === pid) : await this.known(taskId, pid);
    if (!known || known.exitCode !== undefined) {
      cancel();
      if (!known) await stopPid(pid);
      return;
    }
    for (;;) {
      await Promise.race([exit, new Promise((resolve) => setTimeout(resolve, STOP_POLL_MS))]);
      cancel();
      ({ exit, cancel } = this.nextExit(taskId));
      const now = await this.known(taskId, pid);
      if (!now || now.exitCode !== undefined) {
        cancel();
        if (!now) await stopPid(pid);
        return;
      }
    }
  }

  async status(taskId: string, ref: string): Promise<AgentState> {
    const pid = Number(ref);
    const known = await this.known(taskId, pid);
    if (known) return stateOf(known);
    const recorded = await readExitFile(exitFileOf(this.logDir, taskId));
    if (recorded && recorded.pid === pid && recorded.exitCode !== undefined) return stateOf(recorded);
    if (isAlive(pid)) return { phase: 'running' };
    return { phase: 'gone', message: `The agent process ${ref} is gone (it ended while the dispatcher was not watching it) and the task never checked back.` };
  }

  async logs(taskId: string, _ref: string, tail?: number): Promise<string> {
    const file = logFileOf(this.logDir, taskId);
    if (!existsSync(file)) return '';
    return lastLines(readTail(file, OUTPUT_LIMIT).toString('utf8'), tail);
  }

  /**
   * Forgets an ended agent: the spawner drops its record and its exit file, whichever spawner
   * wrote that (the log stays for the logs endpoint).
   */
  async remove(taskId: string, _ref?: string): Promise<void> {
    this.exitWaiters.delete(taskId);
    this.ended.delete(taskId);
    await this.spawner.request({ op: 'forget', taskId });
  }

  async listManaged(): Promise<ManagedAgent[]> {
    const { agents = [] } = await this.spawner.request({ op: 'list' });
    return agents.map((agent) => ({ taskId: agent.taskId, ref: String(agent.pid), state: stateOf(agent) }));
  }

  onStateChange(listener: AgentStateListener): void {
    this.listeners.push(listener);
  }

  /** Reaches the spawner, starting it when it is gone. */
  async ping(): Promise<void> {
    await this.spawner.request({ op: 'get', taskId: '' });
  }

  /** Lets go of the spawner; the agents run on, and the next dispatcher of this replica finds them there. */
  async close(): Promise<void> {
    this.closing = true;
    this.spawner.close();
    this.listeners.length = 0;
  }

  private async known(taskId: string, pid?: number): Promise<SpawnedAgent | undefined> {
    const { agents = [] } = await this.spawner.request({ op: 'get', taskId });
    return agents.find((agent) => pid === undefined || agent.pid === pid);
  }

  /** The next exit of the task's agent pushed by the spawner, and a way to stop waiting for it. */
  private nextExit(taskId: string): { exit: Promise<void>; cancel: () => void } {
    let waiter!: () => void;
    const exit = new Promise<void>((resolve) => {
      waiter = resolve;
      this.exitWaiters.set(taskId, [...(this.exitWaiters.get(taskId) ?? []), resolve]);
    });
    // Drops this waiter only: a concurrent stop of the same task keeps its own.
    const cancel = () => {
      const waiters = (this.exitWaiters.get(taskId) ?? []).filter((resolve) => resolve !== waiter);
      if (waiters.length > 0) this.exitWaiters.set(taskId, waiters);
      else this.exitWaiters.delete(taskId);
    };
    return { exit, cancel };
  }

  private exited(agent: SpawnedAgent): void {
    if (agent.exitCode !== undefined) {
      if (this.ended.size >= ENDED_KEPT) this.ended.delete(this.ended.keys().next().value!);
      this.ended.set(agent.taskId, agent.pid);
    }
    const waiters = this.exitWaiters.get(agent.taskId) ?? [];
    this.exitWaiters.delete(agent.taskId);
    waiters.forEach((resolve) => resolve());
    if (this.closing) return;
    const state: AgentState = { ...(stateOf(agent) as Extract<AgentState, { phase: 'exited' }>), ...(agent.signal && !agent.reason ? { reason: `killed by ${agent.signal}` } : {}) };
    for (const listener of this.listeners) listener(agent.taskId, state);
  }
}

function stateOf(agent: SpawnedAgent): AgentState {
  if (agent.exitCode === undefined) return { phase: 'running' };
  return { phase: 'exited', exitCode: agent.exitCode, ...(agent.reason ? { reason: 'stopped', message: agent.reason } : {}) };
}

/** The spawner program from the build: beside this file when it runs from dist/, else in the project's dist/. */
function spawnerProgram(projectRoot: string): string {
  return __filename.endsWith('.js') ? path.join(__dirname, 'process-spawner.js') : path.join(projectRoot, 'dist/src/dispatcher/runtime/process-spawner.js');
}

async function readExitFile(file: string): Promise<SpawnedAgent | null> {
  try {
    return JSON.parse(await fs.readFile(file, 'utf8')) as SpawnedAgent;
  } catch {
    return null;
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

/**
 * The last `bytes` of the file, read synchronously: at most 1 MiB from the page cache, and
 * four system calls where the promise API's open, stat, read and close each went through the
 * thread pool (a task's output is read once or twice per life).
 */
function readTail(file: string, bytes: number): Buffer {
  const fd = openSync(file, 'r');
  try {
    const { size } = fstatSync(fd);
    const length = Math.min(size, bytes);
    const buffer = Buffer.alloc(length);
    readSync(fd, buffer, 0, length, size - length);
    return buffer;
  } finally {
    closeSync(fd);
  }
}

/** Where process agents' output is kept, one `<task>.log` each. */
export function agentLogDir(dataDir: string): string {
  return path.join(dataDir, 'agent-logs');
}
