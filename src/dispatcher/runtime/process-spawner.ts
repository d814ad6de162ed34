/**
 * The process engine's spawner: a small long-lived program (node built-ins only, a few MB)
 * that starts the agents of one dispatcher replica, so that they are neither forked from
 * the server nor tied to its life. It listens on a unix socket under DATA_DIR
 * (`spawner-protocol.ts`), writes each agent's output to `<task>.log` (kept to its last
 * 1 MiB), records how each agent ended in `<task>.exit`, and pushes exits to the
 * dispatchers connected to it. A dispatcher that restarts connects again and finds its
 * agents where they were.
 *
 * Left without any dispatcher for the orphan window (DISPATCHER_REPLICA_LOST_SECONDS),
 * it stops its agents: by then a surviving replica takes their tasks for lost and fails
 * them, and an agent must not run on for a task that is over. With no agent running and
 * no dispatcher connected it exits after a few seconds; the next dispatcher starts it anew.
 *
 *   node process-spawner.js <socket> <log dir> <orphan seconds>
 */
import { ChildProcess, spawn } from 'node:child_process';
import { closeSync, fstatSync, ftruncateSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import * as net from 'node:net';
import { getPriority, constants as osConstants, setPriority } from 'node:os';
import * as path from 'node:path';
import { exitFileOf, IDLE_NICE, logFileOf, onLines, OUTPUT_LIMIT, SpawnedAgent, SpawnerAnswer, SpawnerExitEvent, SpawnerRequest, SpawnRequest } from './spawner-protocol';

/** A log is cut back to its last OUTPUT_LIMIT bytes when it grows past this. */
const TRIM_AT = 2 * OUTPUT_LIMIT;
const STOP_GRACE_MS = 10_000;
const IDLE_EXIT_MS = 5_000;

interface Agent extends SpawnedAgent {
  child?: ChildProcess;
  fd?: number;
  size: number;
  killer?: NodeJS.Timeout;
  /** Started at the idle priority of a warm pool's agent, not yet raised back by its claim. */
  lowered?: boolean;
}

/** CAP_SYS_NICE: the right to lower a nice value again (setpriority(2)); its bit in /proc's CapEff. */
const CAP_SYS_NICE = 23n;

/**
 * Whether this process may give a process it lowered its priority back. Without it a warm agent
 * would work at the idle priority, below a cold one: the spawner then does not lower it at all.
 */
function mayRaisePriority(): boolean {
  try {
    const capabilities = /^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    return capabilities !== undefined && ((BigInt(`0x${capabilities}`) >> CAP_SYS_NICE) & 1n) === 1n;
  } catch {
    return false;
  }
}

/**
 * A process's threads. On Linux a nice value is a thread's: the threads an agent started after it
 * was lowered (V8's workers, libuv's pool) keep the lower one unless each is raised. Elsewhere the
 * process's value is all there is.
 */
/** A lowered agent's threads are looked at again this long after its start, for those its first ones started. */
const RELOWER_AFTER_MS = 200;

function threadsOf(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).map(Number);
  } catch {
    return [pid];
  }
}

/** Gives every thread of `pid` the nice value `nice` (those `when` accepts); a thread that ended meanwhile is passed over. */
function setThreadsPriority(pid: number, nice: number, when: (current: number) => boolean = () => true): void {
  for (const thread of threadsOf(pid)) {
    try {
      if (when(getPriority(thread))) setPriority(thread, nice);
    } catch {
      // the thread ended meanwhile
    }
  }
}

export class Spawner {
  private readonly agents = new Map<string, Agent>();
  private readonly clients = new Set<net.Socket>();
  private readonly server = net.createServer((socket) => this.accept(socket));
  private idleTimer?: NodeJS.Timeout;
  private orphanTimer?: NodeJS.Timeout;
  /** Spawns run one at a time, each in a turn of the event loop of its own (see `queuedSpawn`). */
  private spawns: Promise<unknown> = Promise.resolve();
  private readonly ownPriority = getPriority();
  private readonly lowersIdleAgents = mayRaisePriority();

  constructor(private readonly socketPath: string, private readonly logDir: string, private readonly orphanSeconds: number) {}

  async listen(): Promise<void> {
    mkdirSync(path.dirname(this.socketPath), { recursive: true });
    try {
      await this.listenOnce();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
      // A socket file is there: another spawner answering on it wins; a dead one's file is replaced.
      if (await answers(this.socketPath)) {
        log('another spawner already listens on this socket; exiting');
        process.exit(0);
      }
      unlinkSync(this.socketPath);
      await this.listenOnce();
    }
    this.whenAlone();
  }

  private listenOnce(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.socketPath, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
  }

  private accept(socket: net.Socket): void {
    this.clients.add(socket);
    clearTimeout(this.idleTimer);
    clearTimeout(this.orphanTimer);
    socket.on('error', () => undefined);
    onLines(socket, (line) => void this.handle(socket, line));
    socket.on('close', () => {
      this.clients.delete(socket);
      this.whenAlone();
    });
  }

  private async handle(socket: net.Socket, line: string): Promise<void> {
    let id = 0;
    let answer: SpawnerAnswer;
    try {
      const request = JSON.parse(line) as SpawnerRequest & { id: number };
      id = request.id;
      answer = { id, ok: true, ...(await this.perform(request)) };
    } catch (error) {
      answer = { id, ok: false, error: error instanceof Error ? error.message : String(error) };
    }
    if (!socket.destroyed) socket.write(`${JSON.stringify(answer)}\n`);
  }

  private async perform(request: SpawnerRequest): Promise<{ pid?: number; agents?: SpawnedAgent[] }> {
    switch (request.op) {
      case 'spawn':
        return { pid: await this.queuedSpawn(request) };
      case 'stop': {
        const agent = this.agents.get(request.taskId);
        if (!agent || (request.pid !== undefined && agent.pid !== request.pid)) return { agents: [] };
        const before = recordOf(agent);
        this.stop(request.taskId);
        return { agents: [before] };
      }
      case 'list':
        return { agents: [...this.agents.values()].map(recordOf) };
      case 'get': {
        const agent = this.agents.get(request.taskId);
        return { agents: agent ? [recordOf(agent)] : [] };
      }
      case 'forget':
        this.forget(request.taskId);
        return {};
      case 'claim':
        this.raise(request.taskId);
        return {};
      default:
        throw new Error(`unknown operation ${(request as { op: string }).op}`);
    }
  }

  /**
   * A spawn blocks this process's event loop while the kernel forks and execs (25 ms each on a
   * virtualised machine, where a drained warm pool asks for twenty at once). Run back to back, a
   * burst of them held every other request behind it, a claim's priority raise among them. Queued,
   * one spawn a turn, the requests that arrive meanwhile are answered between two spawns, and a
   * second spawn of the same task sees the first's agent.
   */
  private queuedSpawn(request: SpawnRequest): Promise<number> {
    const spawned = this.spawns.then(() => new Promise<void>((resolve) => setImmediate(resolve))).then(() => this.spawn(request));
    this.spawns = spawned.catch(() => undefined);
    return spawned;
  }

  /** A repeated spawn of a task whose agent still runs answers that agent's pid. */
  private async spawn(request: SpawnRequest): Promise<number> {
    const known = this.agents.get(request.taskId);
    if (known && known.exitCode === undefined) return known.pid;
    // Made at each start: a folder that could not be made once may be possible now.
    mkdirSync(this.logDir, { recursive: true });
    const fd = openSync(logFileOf(this.logDir, request.taskId), 'a+');
    const child = spawn(request.file, request.args, { cwd: request.cwd, env: request.env, stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      await new Promise<void>((resolve, reject) => {
        child.once('spawn', resolve);
        child.once('error', reject);
      });
    } catch (error) {
      closeSync(fd);
      throw error;
    }
    const agent: Agent = { taskId: request.taskId, pid: child.pid!, child, fd, size: fstatSync(fd).size };
    this.agents.set(request.taskId, agent);
    if (request.idle) this.lower(agent);
    const keep = (chunk: Buffer) => this.write(agent, chunk);
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    child.once('close', (code, signal) => this.ended(agent, code ?? 128 + (signal ? (osConstants.signals[signal] ?? 0) : 0), signal));
    return agent.pid;
  }

  /** Appends to the agent's log; past TRIM_AT the file is cut back to its last OUTPUT_LIMIT bytes (this process is its only writer). */
  private write(agent: Agent, chunk: Buffer): void {
    if (agent.fd === undefined) return;
    try {
      writeSync(agent.fd, chunk);
      agent.size += chunk.length;
      if (agent.size > TRIM_AT) {
        const tail = Buffer.alloc(OUTPUT_LIMIT);
        readSync(agent.fd, tail, 0, OUTPUT_LIMIT, agent.size - OUTPUT_LIMIT);
        ftruncateSync(agent.fd, 0);
        writeSync(agent.fd, tail);
        agent.size = OUTPUT_LIMIT;
      }
    } catch (error) {
      log(`could not write the output of ${agent.taskId}: ${String(error)}`);
    }
  }

  private ended(agent: Agent, exitCode: number, signal: NodeJS.Signals | null): void {
    clearTimeout(agent.killer);
    agent.exitCode = exitCode;
    if (signal) agent.signal = signal;
    if (agent.fd !== undefined) closeSync(agent.fd);
    agent.fd = undefined;
    agent.child = undefined;
    try {
      writeFileSync(exitFileOf(this.logDir, agent.taskId), JSON.stringify(recordOf(agent)));
    } catch (error) {
      log(`could not record the exit of ${agent.taskId}: ${String(error)}`);
    }
    const event: SpawnerExitEvent = { event: 'exit', agent: recordOf(agent) };
    for (const client of this.clients) if (!client.destroyed) client.write(`${JSON.stringify(event)}\n`);
    this.whenAlone();
  }

  /**
   * A warm pool's agent boots and waits at a lower CPU priority, so that a refill starting many
   * of them never takes the cores from the agents at work and from the dispatcher answering
   * claims; `raise` gives it the spawner's priority when its task is assigned.
   */
  private lower(agent: Agent): void {
    if (!this.lowersIdleAgents) return;
    try {
      setPriority(agent.pid, Math.min(19, this.ownPriority + IDLE_NICE));
      agent.lowered = true;
    } catch (error) {
      log(`could not lower the priority of ${agent.taskId}: ${String(error)}`);
      return;
    }
    // Threads the agent started before its main thread was lowered (a runtime's compiler and
    // garbage collector threads start at once) kept the spawner's priority and booted at it;
    // those started since inherit the lower one. Once now, and once more when its start is over.
    this.lowerThreads(agent);
    setTimeout(() => this.lowerThreads(agent), RELOWER_AFTER_MS).unref();
  }

  private lowerThreads(agent: Agent): void {
    if (!agent.lowered || agent.exitCode !== undefined) return;
    const nice = Math.min(19, this.ownPriority + IDLE_NICE);
    setThreadsPriority(agent.pid, nice, (current) => current < nice);
  }

  private raise(taskId: string): void {
    const agent = this.agents.get(taskId);
    if (!agent?.lowered || agent.exitCode !== undefined) return;
    setThreadsPriority(agent.pid, this.ownPriority);
    agent.lowered = false;
  }

  private stop(taskId: string, reason?: string): void {
    const agent = this.agents.get(taskId);
    if (!agent?.child || agent.exitCode !== undefined || agent.killer) return;
    if (reason) agent.reason = reason;
    agent.child.kill('SIGTERM');
    agent.killer = setTimeout(() => agent.child?.kill('SIGKILL'), STOP_GRACE_MS);
  }

  private forget(taskId: string): void {
    const agent = this.agents.get(taskId);
    if (agent && agent.exitCode === undefined) return;
    this.agents.delete(taskId);
    try {
      unlinkSync(exitFileOf(this.logDir, taskId));
    } catch {
      // never written, or already gone
    }
  }

  private running(): Agent[] {
    return [...this.agents.values()].filter((agent) => agent.exitCode === undefined);
  }

  /** With no dispatcher connected: exit when idle, stop the agents when alone for the orphan window. */
  private whenAlone(): void {
    if (this.clients.size > 0) return;
    if (this.running().length === 0) {
      clearTimeout(this.orphanTimer);
      this.orphanTimer = undefined;
      clearTimeout(this.idleTimer);
      this.idleTimer = setTimeout(() => this.exitIfIdle(), IDLE_EXIT_MS);
      return;
    }
    this.orphanTimer ??= setTimeout(() => {
      this.orphanTimer = undefined;
      const reason = `no dispatcher connected to its spawner for ${this.orphanSeconds} s`;
      log(`${reason}; stopping ${this.running().length} agent(s)`);
      for (const agent of this.running()) this.stop(agent.taskId, reason);
    }, this.orphanSeconds * 1000);
  }

  private exitIfIdle(): void {
    if (this.clients.size > 0 || this.running().length > 0) return;
    this.server.close();
    try {
      unlinkSync(this.socketPath);
    } catch {
      // already gone
    }
    process.exit(0);
  }
}

function recordOf(agent: Agent): SpawnedAgent {
  return {
    taskId: agent.taskId,
    pid: agent.pid,
    ...(agent.exitCode === undefined ? {} : { exitCode: agent.exitCode }),
    ...(agent.signal ? { signal: agent.signal } : {}),
    ...(agent.reason ? { reason: agent.reason } : {}),
  };
}

function answers(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.connect(socketPath, () => {
      probe.destroy();
      resolve(true);
    });
    probe.on('error', () => resolve(false));
  });
}

function log(message: string): void {
  process.stderr.write(`${new Date().toISOString()} spawner ${process.pid}: ${message}\n`);
}

if (require.main === module) {
  const [socketPath, logDir, orphanSeconds] = process.argv.slice(2);
  new Spawner(socketPath, logDir, Number(orphanSeconds) || 60).listen().then(
    () => log(`listening on ${socketPath}`),
    (error: unknown) => {
      log(`could not listen on ${socketPath}: ${String(error)}`);
      process.exit(1);
    },
  );
}
