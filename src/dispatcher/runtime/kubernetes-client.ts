import { AsyncLocalStorage } from 'node:async_hooks';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Logger } from '@nestjs/common';
import { ApiException, BatchV1Api, Configuration, CoreV1Api, createConfiguration, KubeConfig, NetworkingV1Api, ServerConfiguration, setHeaderMiddleware } from '@kubernetes/client-node';
import { CallDeadlines, DEFAULT_API_TIMEOUT_SECONDS } from './kubernetes-call-deadline';
import { InFlightLimit, TokenBucket } from './kubernetes-rate-limiter';

export { TokenBucket } from './kubernetes-rate-limiter';

const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/**
 * Where the API server is: the pod's service account when running in a cluster, else
 * the kubeconfig file named by KUBECONFIG, else ~/.kube/config. None of them: an error
 * at boot that says so, rather than a dispatcher that talks to localhost:8080.
 */
export function loadKubeConfig(kubeconfig: string | null, env: NodeJS.ProcessEnv = process.env, tokenFile = SERVICE_ACCOUNT_TOKEN): KubeConfig {
  const kc = new KubeConfig();
  const userConfig = path.join(env.HOME ?? os.homedir(), '.kube', 'config');
  if (env.KUBERNETES_SERVICE_HOST && fs.existsSync(tokenFile)) {
    kc.loadFromCluster();
  } else if (kubeconfig) {
    if (!fs.existsSync(kubeconfig)) throw new Error(`KUBECONFIG names ${kubeconfig}, which does not exist`);
    kc.loadFromFile(kubeconfig);
  } else if (fs.existsSync(userConfig)) {
    kc.loadFromFile(userConfig);
  } else {
    throw new Error('The kubernetes backend needs a cluster: run the dispatcher in a pod (service account), or set KUBECONFIG');
  }
  if (!kc.getCurrentCluster()) throw new Error('The kubeconfig names no current cluster (set its current-context)');
  return kc;
}

export interface RetryPolicy {
  attempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 6, baseDelayMs: 250, maxDelayMs: 15000 };
const TRANSIENT_NETWORK = new Set([
  'ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'EAI_AGAIN',
  'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_CLOSED', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT',
]);

/**
 * The fewest places in flight, whatever KUBE_API_BURST: a call the API server leaves
 * unanswered holds its place until KUBE_API_TIMEOUT_SECONDS, and at a small burst a single
 * such call would stop every other.
 */
const IN_FLIGHT_FLOOR = 10;

/**
 * The API groups the backend uses, every call rate-limited, given KUBE_API_TIMEOUT_SECONDS
 * to be answered (kubernetes-call-deadline.ts), and retried when transient.
 */
export class KubeApi {
  readonly batch: BatchV1Api;
  readonly core: CoreV1Api;
  readonly networking: NetworkingV1Api;
  private readonly logger = new Logger('KubernetesApi');
  private closed = false;
  /** Set inside `urgently`: the calls made there take the rate limiter's urgent lane. */
  private readonly lane = new AsyncLocalStorage<'urgent'>();

  private readonly deadlines: CallDeadlines;
  /**
   * Half of KUBE_API_BURST in flight (never fewer than IN_FLIGHT_FLOOR): a server that stalls
   * then meets at most those and, once it answers them, as many again on the tokens the
   * bucket holds by then; together the burst it was sized for.
   */
  private readonly inFlight: InFlightLimit;

  constructor(
    readonly kubeConfig: KubeConfig,
    private readonly limiter: TokenBucket,
    private readonly retry: RetryPolicy = DEFAULT_RETRY,
    timeoutMs = DEFAULT_API_TIMEOUT_SECONDS * 1000,
  ) {
    this.deadlines = new CallDeadlines(timeoutMs);
    this.inFlight = new InFlightLimit(Math.max(Math.ceil(limiter.burst / 2), IN_FLIGHT_FLOOR));
    this.batch = new BatchV1Api(this.clientConfiguration());
    this.core = new CoreV1Api(this.clientConfiguration());
    this.networking = new NetworkingV1Api(this.clientConfiguration());
  }

  /** As `KubeConfig.makeApiClient` builds it, plus the middleware that gives each request its call's deadline. */
  private clientConfiguration(): Configuration {
    const cluster = this.kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('The kubeconfig names no current cluster (set its current-context)');
    return createConfiguration({
      baseServer: new ServerConfiguration(cluster.server, {}),
      authMethods: { default: this.kubeConfig },
      middleware: [setHeaderMiddleware('User-Agent', 'agent-task-dispatcher')],
      promiseMiddleware: [this.deadlines.middleware()],
    });
  }

  /**
   * Runs one API call; 429, 5xx, connection resets and requests unanswered within the
   * time-out are retried with backoff, honouring Retry-After. Each try takes a place in
   * flight and a token, and has its own time-out; a retry's wait holds no place.
   */
  async call<T>(what: string, request: () => Promise<T>, retry: RetryPolicy = this.retry): Promise<T> {
    for (let attempt = 1; ; attempt += 1) {
      const lane = this.lane.getStore() ?? 'ordinary';
      try {
        // A place in flight first, then a token: the token is taken when the request can go.
        return await this.inFlight.run(lane, async () => {
          await this.limiter.take(lane);
          return this.deadlines.run(request);
        });
      } catch (error) {
        if (attempt >= retry.attempts || !isTransient(error) || this.closed) throw error;
        const backoff = Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** (attempt - 1));
        const delay = retryAfterMs(error) ?? backoff * (0.5 + Math.random() / 2);
        this.logger.warn(`${what} failed (${describeApiError(error)}); retry ${attempt} in ${Math.round(delay)} ms`);
        // Unref'd: a retry still waiting when the process ends does not hold it up.
        await sleep(Math.min(delay, retry.maxDelayMs), true);
      }
    }
  }

  /**
   * Runs `work` with every API call it makes, however deep, on the rate limiter's urgent lane:
   * for calls someone is waiting on now (a warm pod readied before its claim is answered).
   */
  urgently<T>(work: () => Promise<T>): Promise<T> {
    return this.lane.run('urgent', work);
  }

  /** The backend is shutting down: calls still in flight give up instead of retrying. */
  close(): void {
    this.closed = true;
  }
}

export function statusCode(error: unknown): number | undefined {
  if (error instanceof ApiException) return error.code;
  const code = (error as { code?: unknown; statusCode?: unknown } | null)?.statusCode;
  return typeof code === 'number' ? code : undefined;
}

export function isTransient(error: unknown): boolean {
  const code = statusCode(error);
  if (code !== undefined) return code === 429 || (code >= 500 && code !== 501);
  return TRANSIENT_NETWORK.has(networkCode(error) ?? '');
}

export const isNotFound = (error: unknown): boolean => statusCode(error) === 404;
export const isConflict = (error: unknown): boolean => statusCode(error) === 409;

/** The API server's own sentence (its Status message), else the error's. */
export function describeApiError(error: unknown): string {
  if (error instanceof ApiException) {
    const status = parseStatus(error.body);
    return status?.message ? `${error.code} ${status.reason ?? ''}: ${status.message}`.replace(' :', ':') : `HTTP ${error.code}`;
  }
  const code = networkCode(error);
  const message = error instanceof Error ? error.message : String(error);
  return code ? `${message} (${code})` : message;
}

function parseStatus(body: unknown): { message?: string; reason?: string } | undefined {
  if (body && typeof body === 'object') return body as { message?: string; reason?: string };
  if (typeof body !== 'string') return undefined;
  try {
    return JSON.parse(body) as { message?: string; reason?: string };
  } catch {
    return { message: body.slice(0, 300) };
  }
}

function retryAfterMs(error: unknown): number | undefined {
  if (!(error instanceof ApiException)) return undefined;
  const headers = (error.headers ?? {}) as Record<string, string>;
  const value = headers['retry-after'] ?? headers['Retry-After'];
  if (value === undefined) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

function networkCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; current && depth < 4; depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

export function sleep(ms: number, unref = false): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    if (unref) timer.unref();
  });
}
