import { setMaxListeners } from 'node:events';
import { LocalSecrets } from './local-secrets';
import { Logger } from '@nestjs/common';
import Docker from 'dockerode';
import { cpuToNanoCpus, memoryToBytes } from '../../shared/validation/quantities';
import { dockerConnection } from './docker-connection';
import { demultiplexLogs, lastBytes, MAX_LOG_BYTES } from './docker-logs';
import { containerIsolation } from './docker-isolation';
import { ContainerExits } from './docker-exits';
import { AgentSpec, AgentState, AgentStateListener, ManagedAgent, RuntimeBackend } from './runtime';

export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const TASK_ID_LABEL = 'task-id';

export interface DockerRuntimeOptions {
  /** AGENT_SECRETS_FILE: where `secret_env` values come from. */
  secretsFile?: string | null;
  /** DOCKER_HOST: `unix:///path.sock`, a socket path or `tcp://host:port`; null is Docker's default. */
  dockerHost: string | null;
  /** Written into the managed-by label; recovery lists containers by it. */
  dispatcherName: string;
  /** The containers' network (`host` lets agents reach a dispatcher on 127.0.0.1). */
  network: string;
  /** Seconds between SIGTERM and SIGKILL on stop. */
  stopGraceSeconds?: number;
  /** Processes one agent container may run (AGENT_PIDS_LIMIT). */
  pidsLimit?: number;
}

/** A start problem the engine named: the image could not be found or pulled, or start failed. */
interface StartFailure {
  reason: string;
  message: string;
}

interface EngineError {
  statusCode?: number;
  json?: { message?: string; cause?: string } | null;
  message?: string;
}

const KEPT_LOGS = 100;

/**
 * The `local` backend with LOCAL_ENGINE=docker: one container per task through the Docker
 * Engine API (Docker, or Podman's compatible service). The reference of an agent is its
 * container name, known before the engine has a container (while an image is pulled).
 */
export class DockerRuntime implements RuntimeBackend {
  readonly name = 'local' as const;
  readonly hostLocal = true;
  /** Every exit comes from the engine's events (`ContainerExits`); the scheduler's resync is the net under them. */
  readonly reportsChanges = true;
  private readonly logger = new Logger(DockerRuntime.name);
  private readonly docker: Docker;
  private readonly listeners: AgentStateListener[] = [];
  private readonly pulling = new Set<string>();
  private readonly startFailures = new Map<string, StartFailure>();
  /** Output of removed containers, so a final task's logs can still be read. */
  private readonly keptLogs = new Map<string, Buffer>();
  /**
   * Ends the pulls under way at shutdown. Every pull listens on it (each listener is removed when
   * its request ends), so it has as many listeners as images are being pulled: no limit, or Node
   * would warn of a leak past ten.
   */
  private readonly closing = new AbortController();

  private readonly secrets: LocalSecrets;
  private readonly exits: ContainerExits;

  constructor(private readonly options: DockerRuntimeOptions) {
    setMaxListeners(0, this.closing.signal);
    this.docker = new Docker(dockerConnection(options.dockerHost));
    this.secrets = new LocalSecrets(options.secretsFile ?? null);
    this.exits = new ContainerExits(this.docker, `${MANAGED_BY_LABEL}=${options.dispatcherName}`, TASK_ID_LABEL, ({ name, taskId }) => void this.reportExit(taskId, name));
  }

  validate(spec: Pick<AgentSpec, 'image' | 'namespace'>): Record<string, string[]> {
    return spec.image.trim() ? {} : { agent_image: ['agent_image must name a container image.'] };
  }

  async submit(spec: AgentSpec): Promise<string> {
    const name = this.containerName(spec.taskId);
    const body = this.containerBody(name, spec, await this.secrets.resolve(spec.secretEnv ?? {}));
    try {
      await this.createAndStart(body, spec.taskId);
    } catch (error) {
      if (!isMissingImage(error)) throw error;
      this.pulling.add(spec.taskId);
      void this.pullAndStart(body, spec);
    }
    return name;
  }

  async stop(_taskId: string, ref: string): Promise<void> {
    try {
      await this.docker.getContainer(ref).stop({ t: this.options.stopGraceSeconds ?? 10 });
    } catch (error) {
      // 304: already stopped; 404: already gone. Either way nothing runs any more.
      if (![304, 404].includes(statusOf(error))) throw error;
    }
  }

  async status(taskId: string, ref: string): Promise<AgentState> {
    // What is known of a pull or a start failure is read after the engine answered: a
    // pull may end while the inspect is on its way, and its failure must not read as gone.
    const pullingBefore = this.pulling.has(taskId);
    let info: Docker.ContainerInspectInfo;
    try {
      info = await this.docker.getContainer(ref).inspect();
    } catch (error) {
      if (!isNoSuchContainer(error)) throw error;
      const failure = this.startFailures.get(taskId);
      if (failure) return { phase: 'failed_to_start', ...failure };
      // No reason goes with these: a slow pull is progress, not a stuck start (see outcomeOf).
      if (this.pulling.has(taskId)) return { phase: 'starting', message: 'The image is being pulled.' };
      // The pull ended well while the inspect was on its way; the container is being made.
      if (pullingBefore) return { phase: 'starting', message: 'The image was pulled; the container is being created.' };
      return { phase: 'gone', message: `Container ${ref} no longer exists in the container engine.` };
    }
    return stateOf(info, this.startFailures.get(taskId));
  }

  async logs(_taskId: string, ref: string, tail?: number): Promise<string> {
    let output = this.keptLogs.get(ref);
    if (!output) {
      try {
        output = await this.readLogs(ref);
      } catch (error) {
        if (statusOf(error) === 404) return '';
        throw error;
      }
    }
    const text = lastBytes(output);
    if (tail === undefined) return text;
    const lines = text.split('\n');
    if (lines[lines.length - 1] === '') lines.pop();
    return lines.slice(-tail).map((line) => `${line}\n`).join('');
  }

  /**
   * Keeps the output, then removes the container. Not for concurrent calls on one container
   * (RuntimeRegistry makes them one): a log read racing the engine's removal answers empty
   * and would replace the output already kept.
   */
  async remove(taskId: string, ref: string): Promise<void> {
    const container = this.docker.getContainer(ref);
    try {
      this.keepLogs(ref, await this.readLogs(ref));
      await container.remove({ force: true, v: true });
    } catch (error) {
      if (statusOf(error) !== 404) throw error;
    }
    this.startFailures.delete(taskId);
    this.pulling.delete(taskId);
  }

  async listManaged(): Promise<ManagedAgent[]> {
    // Those still running are taken up: their exits are reported from here on.
    await this.exits.watching();
    const containers = await this.docker.listContainers({
      all: true,
      filters: { label: [`${MANAGED_BY_LABEL}=${this.options.dispatcherName}`] },
    });
    const agents: ManagedAgent[] = [];
    for (const container of containers) {
      const taskId = container.Labels[TASK_ID_LABEL];
      const ref = container.Names[0]?.replace(/^\//, '') ?? container.Id;
      if (taskId) agents.push({ taskId, ref, state: await this.status(taskId, ref) });
    }
    return agents;
  }

  onStateChange(listener: AgentStateListener): void {
    this.listeners.push(listener);
  }

  async ping(): Promise<void> {
    // dockerode takes an abort signal here although its typings do not say so.
    const ping = this.docker.ping as unknown as (options: { abortSignal: AbortSignal }) => Promise<unknown>;
    await ping.call(this.docker, { abortSignal: AbortSignal.timeout(5000) });
  }

  async close(): Promise<void> {
    this.closing.abort();
    this.exits.close();
  }

  private containerName(taskId: string): string {
    const prefix = this.options.dispatcherName.toLowerCase().replace(/[^a-z0-9_.-]+/g, '-').replace(/^[^a-z0-9]+/, '');
    return `${prefix || 'agent'}-task-${taskId}`;
  }

  private containerBody(name: string, spec: AgentSpec, secretValues: Record<string, string>): Docker.ContainerCreateOptions {
    const isolation = containerIsolation(spec.isolation, this.options.network, this.options.pidsLimit ?? 1024);
    return {
      name,
      User: isolation.User,
      Image: spec.image,
      Env: Object.entries({ ...spec.env, ...secretValues }).map(([key, value]) => `${key}=${value}`),
      Labels: { [MANAGED_BY_LABEL]: this.options.dispatcherName, [TASK_ID_LABEL]: spec.taskId },
      ExposedPorts: Object.fromEntries(spec.ports.map((port) => [`${port.containerPort}/${port.protocol.toLowerCase()}`, {}])),
      StopTimeout: this.options.stopGraceSeconds ?? 10,
      HostConfig: {
        ...isolation.HostConfig,
        NanoCpus: cpuToNanoCpus(spec.resources.cpu),
        Memory: memoryToBytes(spec.resources.memory),
        AutoRemove: false,
      },
    };
  }

  /** Creates the container (replacing a leftover of an earlier attempt) and starts it. */
  private async createAndStart(body: Docker.ContainerCreateOptions, taskId: string): Promise<void> {
    await this.exits.watching();
    let container: Docker.Container;
    try {
      container = await this.docker.createContainer(body);
    } catch (error) {
      if (statusOf(error) !== 409) throw error;
      await this.docker.getContainer(body.name!).remove({ force: true });
      container = await this.docker.createContainer(body);
    }
    try {
      await container.start();
    } catch (error) {
      this.failToStart(taskId, 'StartFailed', engineMessage(error));
      return;
    }
    this.emit(taskId, { phase: 'running' });
  }

  private async pullAndStart(body: Docker.ContainerCreateOptions, spec: AgentSpec): Promise<void> {
    try {
      await this.pull(spec.image);
      await this.createAndStart(body, spec.taskId);
    } catch (error) {
      this.failToStart(spec.taskId, 'ImagePullFailed', `Image ${spec.image} is not available: ${engineMessage(error)}`);
    } finally {
      this.pulling.delete(spec.taskId);
    }
  }

  /** Pulls an image; the engine reports a failed pull inside the progress stream. */
  private async pull(image: string): Promise<void> {
    const options: Record<string, unknown> = { abortSignal: this.closing.signal };
    const stream = await this.docker.pull(image, options);
    const events = await new Promise<{ error?: string }[]>((resolve, reject) => {
      this.docker.modem.followProgress(stream, (error: Error | null, output: { error?: string }[]) => (error ? reject(error) : resolve(output)));
    });
    const failed = events.find((event) => event.error);
    if (failed) throw new Error(failed.error);
  }

  /** What an exited container's state is, as its inspect tells: its exit code, or the engine's reason. */
  private async reportExit(taskId: string, ref: string): Promise<void> {
    try {
      this.emit(taskId, await this.status(taskId, ref));
    } catch (error) {
      // The scheduler's resync asks again.
      if (!this.closing.signal.aborted) this.logger.warn(`the exit of ${ref} could not be read: ${engineMessage(error)}`);
    }
  }

  private failToStart(taskId: string, reason: string, message: string): void {
    this.startFailures.set(taskId, { reason, message });
    this.logger.warn(`agent of task ${taskId} could not start: ${reason}: ${message}`);
    this.emit(taskId, { phase: 'failed_to_start', reason, message });
  }

  private async readLogs(ref: string): Promise<Buffer> {
    const raw = (await this.docker.getContainer(ref).logs({ stdout: true, stderr: true, follow: false })) as Buffer;
    const output = await demultiplexLogs(this.docker.modem, raw);
    return output.length > MAX_LOG_BYTES ? output.subarray(output.length - MAX_LOG_BYTES) : output;
  }

  private keepLogs(ref: string, output: Buffer): void {
    this.keptLogs.set(ref, output);
    if (this.keptLogs.size > KEPT_LOGS) this.keptLogs.delete(this.keptLogs.keys().next().value!);
  }

  private emit(taskId: string, state: AgentState): void {
    for (const listener of this.listeners) {
      try {
        listener(taskId, state);
      } catch (error) {
        this.logger.error(`a state listener failed for task ${taskId}: ${engineMessage(error)}`);
      }
    }
  }
}

function stateOf(info: Docker.ContainerInspectInfo, failure: StartFailure | undefined): AgentState {
  const state = info.State;
  if (state.Running || state.Paused || state.Restarting) return { phase: 'running' };
  if (failure) return { phase: 'failed_to_start', ...failure };
  if (state.Status === 'exited' || state.Status === 'stopped' || state.Status === 'dead') {
    if (state.OOMKilled) return { phase: 'exited', exitCode: state.ExitCode, reason: 'OOMKilled', message: 'The agent ran out of memory.' };
    return state.Error
      ? { phase: 'exited', exitCode: state.ExitCode, reason: 'Error', message: state.Error }
      : { phase: 'exited', exitCode: state.ExitCode };
  }
  return { phase: 'starting', reason: state.Status };
}

function statusOf(error: unknown): number {
  return (error as EngineError)?.statusCode ?? 0;
}

/** Not found: a 404, or the 500 Podman answers when the container is removed while it is read. */
function isNoSuchContainer(error: unknown): boolean {
  return statusOf(error) === 404 || /no such container/i.test(engineMessage(error));
}

function isMissingImage(error: unknown): boolean {
  return statusOf(error) === 404 && /no such image|image not known/i.test(engineMessage(error));
}

/** The engine's own sentence for an error, without dockerode's wrapping. */
function engineMessage(error: unknown): string {
  const engineError = error as EngineError;
  return engineError?.json?.message ?? engineError?.message ?? String(error);
}
