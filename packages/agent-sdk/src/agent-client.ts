import { exchange, HttpAnswer } from './http-exchange.js';
import { installSkills, InstalledSkill, InstallSkillsOptions, SkillRef } from './install-skills.js';

/**
 * A small typed client for the dispatcher's agent protocol (CONTRACT section 3, "Agent
 * protocol"). An agent builds it from the environment the dispatcher gives it:
 *
 *   const agent = AgentClient.fromEnv();
 *   const { brief_key } = await agent.checkin();
 *   await agent.progress(50, 'half way');
 *   await agent.writeObject(agent.resultKey('result.json'), JSON.stringify(result));
 *   await agent.checkback({ status: 'completed', result_key: agent.resultKey('result.json') });
 *
 * The same agent runs in a warm pool unchanged: started with AGENT_POOL and AGENT_ID and no
 * TASK_ID, its `checkin()` first waits for the task the dispatcher assigns it (`claim()`).
 */

export interface CheckinData {
  /** Object key of the task's brief; empty or null when the task has none. */
  brief_key: string | null;
  env: Record<string, string>;
  /** Skill versions pinned on the task; `installSkills` downloads and unpacks them. */
  skills: SkillRef[];
}

export interface Checkback {
  status: 'completed' | 'failed';
  result_key?: string;
  result_metadata?: Record<string, unknown>;
  error?: string;
}

export interface AgentClientOptions {
  /** Empty for a pool agent until its claim is answered. */
  taskId: string;
  /** A warm pool's agent: its pool and id, for `POST /agent/claim`. */
  pool?: { name: string; agentId: string };
  /** Seconds one claim request waits for a task (the dispatcher allows 0 to 55). Default 25. */
  claimWaitSeconds?: number;
  dispatcherUrl: string;
  agentKey: string;
  /**
   * How long a request is tried again after connection errors and 5xx answers. Default
   * 120 s: longer than a dispatcher takes to restart, so an agent outlives one.
   */
  retryForMs?: number;
  /**
   * The task's time-out (`TASK_DEADLINE`, set by the dispatcher): a request is tried again
   * until then when that is later than `retryForMs` from now, so an agent outlives a
   * dispatcher that stays down for longer than a restart (a crash loop, a node lost) as long
   * as its task may still finish. Past it, the task has timed out and nothing is gained.
   */
  deadline?: Date;
  /** At most this many extra attempts as well, when given. */
  retries?: number;
  /** First wait between attempts, doubled each time up to 10 s. Default 500 ms. */
  retryDelayMs?: number;
  /** Time allowed for one request. Default 30 s. */
  requestTimeoutMs?: number;
  /**
   * W3C trace context sent as `traceparent` / `tracestate` on every call, so the dispatcher's
   * spans of this agent's calls join the task's trace. `fromEnv` takes them from `TRACEPARENT`
   * / `TRACESTATE`. Leave them out when the agent's own OpenTelemetry instrumentation of
   * `node:http` (which the client's calls go through) writes these headers.
   */
  traceparent?: string;
  tracestate?: string;
}

/** A refusal or failure from the dispatcher, with its error code and message. */
export class AgentProtocolError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'AgentProtocolError';
  }
}

interface ErrorEnvelope {
  ok?: boolean;
  error?: { code?: string; message?: string; details?: Record<string, unknown> };
}

const RESULTS_PREFIX = 'results/';
const MAX_RETRY_DELAY_MS = 10_000;

export interface Claim {
  task_id: string;
  agent_key: string;
}

export class AgentClient {
  readonly dispatcherUrl: string;
  readonly pool?: { name: string; agentId: string };
  private currentTaskId: string;
  private agentKey: string;
  private claimed?: Promise<Claim>;
  private readonly claimWaitSeconds: number;
  private readonly retries: number;
  private readonly retryForMs: number;
  private readonly deadline: number | null;
  private readonly retryDelayMs: number;
  private readonly requestTimeoutMs: number;
  private readonly traceHeaders: Record<string, string>;

  constructor(options: AgentClientOptions) {
    this.currentTaskId = options.taskId;
    this.pool = options.pool;
    this.claimWaitSeconds = options.claimWaitSeconds ?? 25;
    this.dispatcherUrl = options.dispatcherUrl.replace(/\/+$/, '');
    this.agentKey = options.agentKey;
    this.retries = options.retries ?? Number.POSITIVE_INFINITY;
    this.retryForMs = options.retryForMs ?? 120_000;
    const deadline = options.deadline?.getTime();
    this.deadline = deadline !== undefined && Number.isFinite(deadline) ? deadline : null;
    this.retryDelayMs = options.retryDelayMs ?? 500;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    this.traceHeaders = traceHeadersOf(options.traceparent, options.tracestate);
  }

  /**
   * Reads TASK_ID, DISPATCHER_URL and AGENT_KEY; a missing one is an error naming it. Without
   * TASK_ID and with AGENT_POOL and AGENT_ID (a warm pool's agent), the task comes from the
   * claim `checkin()` waits for. TRACEPARENT / TRACESTATE, when set, go on every call;
   * TASK_DEADLINE (RFC 3339), when set, is how long an unreachable dispatcher is waited for.
   */
  static fromEnv(env: Record<string, string | undefined> = process.env, options: Partial<AgentClientOptions> = {}): AgentClient {
    const warm = !env.TASK_ID?.trim() && Boolean(env.AGENT_POOL?.trim());
    const needed = warm ? ['DISPATCHER_URL', 'AGENT_KEY', 'AGENT_ID'] : ['TASK_ID', 'DISPATCHER_URL', 'AGENT_KEY'];
    const missing = needed.filter((name) => !env[name]?.trim());
    if (missing.length > 0) {
      throw new Error(`The agent environment lacks ${missing.join(', ')}; the dispatcher sets them when it starts an agent.`);
    }
    return new AgentClient({
      taskId: warm ? '' : env.TASK_ID!.trim(),
      dispatcherUrl: env.DISPATCHER_URL!.trim(),
      agentKey: env.AGENT_KEY!.trim(),
      traceparent: env.TRACEPARENT?.trim() || undefined,
      tracestate: env.TRACESTATE?.trim() || undefined,
      deadline: env.TASK_DEADLINE?.trim() ? new Date(env.TASK_DEADLINE.trim()) : undefined,
      ...(warm ? { pool: { name: env.AGENT_POOL!.trim(), agentId: env.AGENT_ID!.trim() } } : {}),
      ...options,
    });
  }

  /** The task's id; empty for a pool agent until its claim is answered. */
  get taskId(): string {
    return this.currentTaskId;
  }

  /**
   * A pool agent's wait for its task: asks `POST /agent/claim` until a task is assigned, then
   * uses the task's id and per-task key for every later call. A cold agent has its task already.
   */
  claim(): Promise<Claim> {
    if (!this.pool) return Promise.resolve({ task_id: this.currentTaskId, agent_key: this.agentKey });
    this.claimed ??= this.waitForClaim(this.pool);
    return this.claimed;
  }

  private async waitForClaim(pool: { name: string; agentId: string }): Promise<Claim> {
    const path = `/agent/claim?wait_seconds=${this.claimWaitSeconds}`;
    for (;;) {
      const response = await this.send('POST', path, {
        body: JSON.stringify({ pool: pool.name, agent_id: pool.agentId }),
        headers: { 'content-type': 'application/json' },
      }, (this.claimWaitSeconds + 10) * 1000);
      if (response.status === 204) continue;
      const { data } = JSON.parse(response.text()) as { data: Claim };
      this.currentTaskId = data.task_id;
      this.agentKey = data.agent_key;
      return data;
    }
  }

  /** The key for an object this agent may write: `results/<task_id>/<name>`. */
  resultKey(name: string): string {
    return `${RESULTS_PREFIX}${this.taskId}/${name.replace(/^\/+/, '')}`;
  }

  /** Announces the agent; the task becomes `running`. Gives the brief's key and the env. */
  async checkin(): Promise<CheckinData> {
    await this.claim();
    const body = await this.json<{ data: CheckinData }>('POST', '/agent/checkin', { task_id: this.taskId });
    return { brief_key: body.data?.brief_key ?? null, env: body.data?.env ?? {}, skills: body.data?.skills ?? [] };
  }

  /** Downloads, verifies (SHA-256) and unpacks the task's skills into `<dir>/<slug>`. */
  installSkills(dir: string, options?: InstallSkillsOptions): Promise<InstalledSkill[]> {
    return installSkills(this, dir, options);
  }

  /** Reports progress, `percentage` a whole number from 0 to 100. */
  async progress(percentage: number, message?: string, data?: Record<string, unknown>): Promise<void> {
    await this.json('POST', '/agent/progress', { task_id: this.taskId, percentage, message, data });
  }

  /** The final word on the task; the dispatcher reports it to the controller. */
  async checkback(checkback: Checkback): Promise<void> {
    await this.json('POST', '/agent/checkback', { task_id: this.taskId, ...checkback });
  }

  /** Reads an object the task may see (its brief). */
  async readObject(key: string): Promise<Buffer> {
    return (await this.send('GET', this.objectPath(key))).body;
  }

  /** Writes an object under `results/<task_id>/`; other keys are refused with 403. */
  async writeObject(key: string, body: Buffer | string, contentType = 'application/octet-stream'): Promise<void> {
    await this.send('PUT', this.objectPath(key), { body, headers: { 'content-type': contentType } });
  }

  private objectPath(key: string): string {
    return `/agent/objects/${key.split('/').map(encodeURIComponent).join('/')}`;
  }

  private async json<T>(method: string, path: string, payload: unknown): Promise<T> {
    const response = await this.send(method, path, {
      body: JSON.stringify(payload),
      headers: { 'content-type': 'application/json' },
    });
    const text = response.text();
    return (text ? JSON.parse(text) : {}) as T;
  }

  /** One request, retried on connection errors and 5xx answers with doubling waits, for `retryForMs` or until the task's deadline, whichever is later. */
  private async send(method: string, path: string, init: { body?: Uint8Array | string; headers?: Record<string, string> } = {}, timeoutMs = this.requestTimeoutMs): Promise<HttpAnswer> {
    const url = this.dispatcherUrl + path;
    const until = Math.max(Date.now() + this.retryForMs, this.deadline ?? 0);
    const mayRetry = (attempt: number) => attempt < this.retries && Date.now() + this.delayOf(attempt) <= until;
    for (let attempt = 0; ; attempt += 1) {
      let response: HttpAnswer;
      try {
        response = await exchange(url, {
          method,
          // X-Task-Id names the task for keys that do not (the brief's key, the global key).
          headers: { ...this.traceHeaders, 'x-agent-key': this.agentKey, ...(this.currentTaskId ? { 'x-task-id': this.currentTaskId } : {}), ...init.headers },
          body: init.body,
          timeoutMs,
        });
      } catch (error) {
        if (mayRetry(attempt)) {
          await this.pause(attempt);
          continue;
        }
        throw new AgentProtocolError(0, 'unreachable', `${method} ${path} could not reach the dispatcher at ${this.dispatcherUrl}: ${describe(error)}`);
      }
      if (response.ok) return response;
      if (response.status >= 500 && mayRetry(attempt)) {
        await this.pause(attempt);
        continue;
      }
      throw toProtocolError(method, path, response);
    }
  }

  private delayOf(attempt: number): number {
    return Math.min(MAX_RETRY_DELAY_MS, this.retryDelayMs * 2 ** attempt);
  }

  private pause(attempt: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, this.delayOf(attempt)));
  }
}

function toProtocolError(method: string, path: string, response: HttpAnswer): AgentProtocolError {
  const text = response.text();
  let envelope: ErrorEnvelope = {};
  try {
    envelope = JSON.parse(text) as ErrorEnvelope;
  } catch {
    // not the dispatcher's envelope: the status alone tells
  }
  const code = envelope.error?.code ?? `http_${response.status}`;
  const reason = envelope.error?.message ?? (text.slice(0, 200) || response.statusText);
  return new AgentProtocolError(response.status, code, `${method} ${path} was refused with ${response.status} ${code}: ${reason}`, envelope.error?.details);
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as Error & { cause?: unknown }).cause;
    return cause instanceof Error ? `${error.message} (${cause.message})` : error.message;
  }
  return String(error);
}

const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** A malformed TRACEPARENT is left out rather than sent: the call matters more than its trace. */
function traceHeadersOf(traceparent: string | undefined, tracestate: string | undefined): Record<string, string> {
  if (!traceparent || !TRACEPARENT.test(traceparent)) return {};
  return tracestate ? { traceparent, tracestate } : { traceparent };
}
