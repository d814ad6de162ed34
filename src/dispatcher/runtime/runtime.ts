/**
 * What the dispatcher asks of a place that runs agents. One implementation per file:
 * `process-runtime.ts` and `docker-runtime.ts` (the `local` backend, by LOCAL_ENGINE) and
 * `kubernetes-runtime.ts`; `runtime.factory.ts` picks them from config.
 */
import type { AgentIsolation } from '../../shared/task-protocol/isolation';
import type { PodAdditions } from '../../shared/task-protocol/pod-additions';
import type { SecretRef } from '../../shared/task-protocol/secret-env';

/** The runtime types a dispatcher can offer: the one list of them in the project. */
export const RUNTIME_BACKEND_NAMES = ['local', 'kubernetes'] as const;
export type RuntimeBackendName = (typeof RUNTIME_BACKEND_NAMES)[number];

export interface AgentSpec {
  taskId: string;
  image: string;
  /** Kubernetes namespace; empty means the backend's default. Ignored by local engines. */
  namespace: string;
  /** The task's env plus TASK_ID, DISPATCHER_URL and AGENT_KEY. */
  env: Record<string, string>;
  resources: { cpu: string; memory: string };
  ports: { containerPort: number; protocol: 'TCP' | 'UDP' | 'SCTP' }[];
  timeoutSeconds: number;
  /** Runtime class, egress and security with the dispatcher's defaults filled in. */
  isolation: AgentIsolation;
  /** Variables from secrets: on Kubernetes `secretKeyRef`s, on the local engines values read from AGENT_SECRETS_FILE at start. */
  secretEnv?: Record<string, SecretRef>;
  /** The task's own pod labels, annotations, node selector, tolerations and priority class (Kubernetes only). */
  pod?: PodAdditions;
  /**
   * A warm pool's agent, started before its task: a backend that can may run it at a lower CPU
   * priority until `claimFor`, so booting replacements never slows the agents already at work.
   */
  warm?: boolean;
}

/**
 * What a backend knows of one agent. `exited` carries the process's exit code;
 * `failed_to_start` the runtime's reason (ImagePullBackOff, ENOENT, ...) and message.
 */
export type AgentState =
  | { phase: 'starting'; reason?: string; message?: string }
  | { phase: 'running' }
  | { phase: 'exited'; exitCode: number; reason?: string; message?: string }
  | { phase: 'failed_to_start'; reason: string; message: string }
  | { phase: 'deadline_exceeded'; message?: string }
  | { phase: 'gone'; message?: string };

/** A state after which the agent does nothing more: its task's outcome. */
export function hasEnded(state: AgentState): boolean {
  return state.phase !== 'starting' && state.phase !== 'running';
}

export interface ManagedAgent {
  taskId: string;
  ref: string;
  state: AgentState;
}

/**
 * How often the dispatcher asks a backend that reports its changes (`reportsChanges`) about its
 * agents anyway: the resync, the net under its reports, as informers have.
 */
export const REPORTED_RESYNC_MS = 30_000;

export type AgentStateListener = (taskId: string, state: AgentState) => void;

export interface RuntimeBackend {
  readonly name: RuntimeBackendName;
  /**
   * True when only the dispatcher process that started an agent can see it (child
   * processes, containers of this host's engine); false when every replica can (Jobs).
   */
  readonly hostLocal: boolean;
  /**
   * True when the backend reports every change of its agents by itself (a watch of the
   * cluster): the scheduler then asks it about each live task only on a slow resync, not on
   * every housekeeping round, so an idle dispatcher with thousands of Jobs stays idle.
   */
  readonly reportsChanges?: boolean;
  /** Problems with a spec this backend can never run (an unmapped image, ...), by field. */
  validate(spec: Pick<AgentSpec, 'image' | 'namespace' | 'pod'>): Record<string, string[]>;
  /** Starts the agent; returns the backend's reference (Job name, container id, pid). */
  submit(spec: AgentSpec): Promise<string>;
  /** SIGTERM, then SIGKILL after a grace period (or the backend's equivalent). */
  stop(taskId: string, ref: string): Promise<void>;
  status(taskId: string, ref: string): Promise<AgentState>;
  /** The agent's output, the last `tail` lines when given. */
  logs(taskId: string, ref: string, tail?: number): Promise<string>;
  /**
   * Backends that can stream an agent's output: one read of its current pod's output from
   * the start, open until that output ends (or `signal`); null while it has none to read.
   * `source` names what was read (the pod), so a reader that reconnects knows whether it is
   * reading the same output again. Backends without it are followed by polling `logs`.
   */
  followLogs?(taskId: string, ref: string, signal: AbortSignal): Promise<LogFollow | null>;
  /** Frees what the agent left once its task is final (containers, Jobs); one call at a time per agent. */
  remove(taskId: string, ref: string): Promise<void>;
  /**
   * A warm pool's running agent (known by `agentKey`) takes the task of `spec`: what the task's
   * isolation needs beyond the pool's is put in place before this resolves (Kubernetes: the
   * task's NetworkPolicy and Secret). Absent: the agent needs nothing more.
   */
  claimFor?(agentKey: string, ref: string, spec: AgentSpec): Promise<void>;
  /** Every agent this dispatcher started that the backend still knows, for recovery. */
  listManaged(): Promise<ManagedAgent[]>;
  /** Pushes state changes as the backend sees them; the dispatcher also polls `status`. */
  onStateChange(listener: AgentStateListener): void;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** An open read of an agent's output: `source` is what it reads (a pod name). */
export interface LogFollow {
  source: string;
  chunks: AsyncIterable<string>;
}

export const RUNTIME_BACKENDS = Symbol('RUNTIME_BACKENDS');

/** START_GRACE_SECONDS for pull and config errors and pod creation; PENDING_GRACE_SECONDS for a pod no node takes yet. */
export interface StartGraces {
  startSeconds: number;
  pendingSeconds: number;
}

/**
 * The runtime cannot be reached now (its API server down, throttling, a reset connection):
 * the submit is to be tried again later, not the task failed.
 */
export class RuntimeUnavailableError extends Error {}
