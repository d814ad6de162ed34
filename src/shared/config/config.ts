import { z } from 'zod';
import { hostname } from 'node:os';
import * as path from 'node:path';
import { RUNTIME_BACKEND_NAMES, RuntimeBackendName } from '../../dispatcher/runtime/runtime';
import { AgentIsolationDefaults, readIsolationDefaults } from './isolation-config';
import { Reader } from './env-reader';
import { AgentFloor, readAgentFloor } from './floor-config';
import { KubernetesSettings, readKubernetesSettings } from './kubernetes-settings';
import { readSubscriptionSettings, SubscriptionSettings } from './subscription-settings';
import { readWarmPools, WarmPool } from './warm-pools-settings';

export { Reader };

export type Role = 'controller' | 'dispatcher' | 'all';
export const ROLES: readonly Role[] = ['controller', 'dispatcher', 'all'];

export type LocalEngine = 'process' | 'docker';

/** Every setting of both roles, typed. Read once at boot by `loadConfig`. */
export interface AppConfig {
  role: Role;
  production: boolean;
  host: string;
  controllerPort: number;
  dispatcherPort: number;
  dataDir: string;
  logLevel: string;
  /** `auto`: pretty lines when stdout is a terminal, JSON lines otherwise. */
  logFormat: 'auto' | 'json' | 'pretty';
  /** Express `trust proxy`: false, true, a hop count or a list of addresses. */
  trustProxy: boolean | number | string;
  /**
   * Whether the controller answers its hot routes (webhooks, callbacks, progress) ahead of
   * Express; off, the Nest routes answer them. The differential spec runs both ways.
   */
  httpHotLane: boolean;
  /**
   * How often the event loop's delay is sampled for the `nodejs_eventloop_lag_*` series, in ms.
   * Each sample is a timer firing: at prom-client's 10 ms default an idle process spends about
   * 9 ms of CPU a second on it (scripts/bench-idle.mjs measures it); a stall longer than this
   * is always in the max.
   */
  metricsEventLoopResolutionMs: number;

  databaseUrl: string | null;
  databasePoolSize: number;
  /** True when the database is the embedded PGlite of this process (set at boot, never by a setting). */
  databaseEmbedded: boolean;
  migrationsRun: boolean;
  redisUrl: string | null;
  cachePrefix: string;
  s3: { endpoint: string; accessKey: string; secretKey: string; bucket: string; region: string } | null;

  maxJsonBytes: number;
  maxPackageBytes: number;

  // controller
  publicUrl: string;
  /** TRACE_URL_TEMPLATE: the console links a task's trace id through it (`{trace_id}` is replaced). */
  traceUrlTemplate: string | null;
  apiToken: string;
  secretKey: string;
  callbackSigningKey: string | null;
  dispatcherApiKey: string | null;
  oauthTokenTtlSeconds: number;
  /** Token endpoint requests allowed per client and per address per minute. */
  oauthTokenRateLimit: number;
  forgeWebhookSecret: string | null;
  chatSigningSecret: string | null;
  customWebhookSecret: string | null;
  authFailureLimit: number;
  authFailureWindowSeconds: number;
  taskWatchdogGraceSeconds: number;
  /** How often pending tasks are offered to dispatchers again and the watchdog looks. */
  taskDispatchRetrySeconds: number;
  /** How many pending tasks one dispatch round claims. */
  dispatchBatchSize: number;
  /** How long a dispatch round's claim on a pending task lasts; a replica that dies holding one holds it no longer. */
  dispatchClaimLeaseSeconds: number;
  /** Task requests one controller process has in flight to one dispatcher at most. */
  dispatchConcurrencyPerDispatcher: number;
  webhookPayloadMaxBytes: number;
  /** Final tasks (with their briefs, results, logs and delivered callbacks) are deleted this long after they ended; 0 keeps them. */
  taskRetentionDays: number;
  /** Webhook ledger rows are deleted this long after they arrived; 0 keeps them. */
  deliveryRetentionDays: number;
  /** How long task and dispatcher events are kept for `GET /api/v1/events/` to resume from (`Last-Event-ID`). */
  eventRetentionHours: number;
  /** Audit rows are deleted this long after they were written; 0 keeps them. */
  auditRetentionDays: number;
  /** Outbound event delivery: SUBSCRIPTION_ALLOWED_CIDRS, SUBSCRIPTION_RETRY_SCHEDULE, SUBSCRIPTION_CONCURRENCY_PER_ENDPOINT. */
  subscriptions: SubscriptionSettings;

  // dispatcher
  apiKey: string;
  agentKey: string;
  agentKeyPerTaskOnly: boolean;
  dispatcherName: string;
  /** This dispatcher process among replicas: owns the agents of the host-local engines it starts. */
  dispatcherInstance: string;
  dispatcherPublicUrl: string;
  dispatcherCloud: string;
  dispatcherLabels: Record<string, string>;
  dispatcherBackends: RuntimeBackendName[];
  heartbeatIntervalSeconds: number;
  /** How often this replica writes its heartbeat to the database. */
  dispatcherReplicaHeartbeatSeconds: number;
  /** A replica silent this long is lost: its host-local tasks are failed by a survivor. */
  dispatcherReplicaLostSeconds: number;
  controllerUrl: string | null;
  controllerToken: string | null;
  controllerClientId: string | null;
  controllerClientSecret: string | null;
  maxConcurrentTasks: number;
  startGraceSeconds: number;
  callbackMaxAgeSeconds: number;
  localEngine: LocalEngine;
  dockerHost: string | null;
  /** The docker engine's container network; `host` lets agents reach DISPATCHER_URL on loopback. */
  dockerNetwork: string;
  localImageCommands: Record<string, string>;
  kubeNamespace: string;
  kubeconfig: string | null;
  /** Client-side token bucket towards the API server: steady requests per second and burst (KUBE_API_QPS, KUBE_API_BURST). */
  kubeApiQps: number;
  kubeApiBurst: number;
  jobTtlSecondsAfterFinished: number;
  /** Runtime class, egress and security defaults for agents (AGENT_RUNTIME_CLASS, AGENT_EGRESS, ...). */
  agentIsolation: AgentIsolationDefaults;
  /** The kubernetes backend's production settings (kubernetes-settings.ts). */
  kubernetes: KubernetesSettings;
  /** What no task may ask beyond, and the limits of every agent pod (floor-config.ts). */
  agentFloor: AgentFloor;
  /** A port of the dispatcher's own for agents, answering `/agent/*` only (null: agents use DISPATCHER_PORT). */
  agentPort: number | null;
  /** The DISPATCHER_URL agents are given: AGENT_PUBLIC_URL, else DISPATCHER_PUBLIC_URL (on AGENT_PORT when that is set). */
  agentDispatcherUrl: string;
  /** Whether DISPATCHER_PORT keeps answering `/agent/*` (for agents started before AGENT_PORT was set). */
  agentApiOnMainPort: boolean;
  /** The secrets (names or `*` patterns) a task's `secret_env` may name. Empty: none. */
  agentSecretAllowlist: string[];
  /** JSON or YAML `{"<secret>": {"<key>": "<value>"}}` the local engines read `secret_env` values from. */
  agentSecretsFile: string | null;
  /** WARM_POOLS: agents kept running before their task arrives. */
  warmPools: WarmPool[];
  /** Event streams and log follows one principal may hold open, counted across every controller replica. */
  streamsPerPrincipal: number;
  /** How long a stream's lease counts after its replica stopped renewing it (a replica that died). */
  streamLeaseSeconds: number;
  /** Event streams and log follows one replica serves at once. */
  streamsPerReplica: number;
  /** Bytes a live event stream's client may leave unsent before the stream is cut. */
  streamBufferBytes: number;
  /** Node's HTTP server limits for both roles' ports. */
  httpServer: HttpServerSettings;
  /** Refused unverified webhook requests one address may make per minute before it is throttled (429). */
  webhookRefusalsPerMinute: number;
}

export interface HttpServerSettings {
  keepAliveTimeoutMs: number;
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  maxConnections: number;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
}

/** Secrets that are generated in embedded mode and required in production, per role. */
export const CONTROLLER_SECRETS = ['API_TOKEN', 'SECRET_KEY', 'CALLBACK_SIGNING_KEY', 'DISPATCHER_API_KEY'] as const;
export const DISPATCHER_SECRETS = ['API_KEY', 'AGENT_KEY', 'CALLBACK_SIGNING_KEY'] as const;
/** Secrets that production may leave unset on purpose (the feature is then off). */
export const OPTIONAL_IN_PRODUCTION = new Set(['CALLBACK_SIGNING_KEY', 'DISPATCHER_API_KEY']);

type Env = Record<string, string | undefined>;

/** The role from `--role X` / `--role=X` on the command line, else `ROLE`, else `all`. */
export function roleFrom(argv: string[], env: Env): string {
  const index = argv.findIndex((arg) => arg === '--role' || arg.startsWith('--role='));
  if (index >= 0) {
    const arg = argv[index];
    return arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : (argv[index + 1] ?? '');
  }
  return env.ROLE?.trim() || 'all';
}

/**
 * Reads and validates every setting. Secrets are expected to be present in `env`
 * already (embedded mode fills them in from `secrets.ts` before this runs).
 */
export function loadConfig(env: Env, argv: string[] = []): AppConfig {
  const r = new Reader(env);
  const roleName = roleFrom(argv, env);
  if (!ROLES.includes(roleName as Role)) {
    throw new ConfigError([`ROLE (or --role) must be one of ${ROLES.join(', ')} (got "${roleName}")`]);
  }
  const role = roleName as Role;
  const production = env.NODE_ENV === 'production';
  const controllerPort = r.int('CONTROLLER_PORT', 8000, 0, 65535);
  const dispatcherPort = r.int('DISPATCHER_PORT', 8080, 0, 65535);
  const dataDir = path.resolve(r.string('DATA_DIR', './.data'));
  const s3Endpoint = r.url('S3_ENDPOINT', null);
  const s3 = s3Endpoint
    ? {
        endpoint: s3Endpoint,
        accessKey: r.string('S3_ACCESS_KEY', ''),
        secretKey: r.string('S3_SECRET_KEY', ''),
        bucket: r.string('S3_BUCKET', 'agent-tasks'),
        region: r.string('S3_REGION', 'us-east-1'),
      }
    : null;
  if (s3 && (!s3.accessKey || !s3.secretKey)) {
    r.problems.push('S3_ACCESS_KEY and S3_SECRET_KEY are required when S3_ENDPOINT is set');
  }
  const controllerPublic = `http://127.0.0.1:${controllerPort}`;

  const agentIsolation = readIsolationDefaults(r);
  const config: AppConfig = {
    role,
    production,
    host: r.string('HOST', production ? '0.0.0.0' : '127.0.0.1'),
    controllerPort,
    dispatcherPort,
    dataDir,
    trustProxy: parseTrustProxy(r.string('TRUST_PROXY', 'false')),
    httpHotLane: r.bool('HTTP_HOT_LANE', true),
    logLevel: r.oneOf('LOG_LEVEL', 'info', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
    logFormat: r.oneOf('LOG_FORMAT', 'auto', ['auto', 'json', 'pretty']),
    metricsEventLoopResolutionMs: r.int('METRICS_EVENT_LOOP_RESOLUTION_MS', 100, 1, 60_000),

    databaseUrl: r.url('DATABASE_URL', null, ['postgres:', 'postgresql:']),
    databasePoolSize: r.int('DATABASE_POOL_SIZE', 10, 1, 200),
    databaseEmbedded: false,
    migrationsRun: r.bool('MIGRATIONS_RUN', true),
    redisUrl: r.url('REDIS_URL', null, ['redis:', 'rediss:']),
    cachePrefix: r.string('CACHE_PREFIX', 'atc:'),
    s3,

    maxJsonBytes: r.int('MAX_JSON_BYTES', 1024 * 1024, 1024, 1024 * 1024 * 1024),
    maxPackageBytes: r.int('MAX_PACKAGE_BYTES', 50 * 1024 * 1024, 1024, 10 * 1024 * 1024 * 1024),

    publicUrl: r.url('PUBLIC_URL', controllerPublic) ?? controllerPublic,
    traceUrlTemplate: r.parse('TRACE_URL_TEMPLATE', null, TRACE_URL_TEMPLATE, 'an http(s) URL holding {trace_id}, e.g. https://tempo.example/explore?traceId={trace_id}'),
    apiToken: r.string('API_TOKEN', ''),
    secretKey: r.string('SECRET_KEY', ''),
    callbackSigningKey: r.optional('CALLBACK_SIGNING_KEY'),
    dispatcherApiKey: r.optional('DISPATCHER_API_KEY'),
    oauthTokenTtlSeconds: r.int('OAUTH_TOKEN_TTL_SECONDS', 3600, 60, 7 * 24 * 3600),
    oauthTokenRateLimit: r.int('OAUTH_TOKEN_RATE_LIMIT', 60, 1, 100000),
    forgeWebhookSecret: r.optional('FORGE_WEBHOOK_SECRET'),
    chatSigningSecret: r.optional('CHAT_SIGNING_SECRET'),
    customWebhookSecret: r.optional('CUSTOM_WEBHOOK_SECRET'),
    authFailureLimit: r.int('AUTH_FAILURE_LIMIT', 20, 1, 100000),
    authFailureWindowSeconds: r.int('AUTH_FAILURE_WINDOW_SECONDS', 60, 1, 86400),
    taskWatchdogGraceSeconds: r.int('TASK_WATCHDOG_GRACE_SECONDS', 60, 0, 86400),
    taskDispatchRetrySeconds: r.int('TASK_DISPATCH_RETRY_SECONDS', 5, 1, 3600),
    dispatchBatchSize: r.int('DISPATCH_BATCH_SIZE', 64, 1, 1000),
    dispatchClaimLeaseSeconds: r.int('DISPATCH_CLAIM_LEASE_SECONDS', 60, 1, 3600),
    dispatchConcurrencyPerDispatcher: r.int('DISPATCH_CONCURRENCY_PER_DISPATCHER', 16, 1, 256),
    webhookPayloadMaxBytes: r.int('WEBHOOK_PAYLOAD_MAX_BYTES', 256 * 1024, 0, 1024 * 1024 * 1024),
    taskRetentionDays: r.int('TASK_RETENTION_DAYS', 30, 0, 36500),
    deliveryRetentionDays: r.int('DELIVERY_RETENTION_DAYS', 14, 0, 36500),
    eventRetentionHours: r.int('EVENT_RETENTION_HOURS', 24, 1, 8760),
    auditRetentionDays: r.int('AUDIT_RETENTION_DAYS', 365, 0, 36500),
    subscriptions: readSubscriptionSettings(r),

    apiKey: r.string('API_KEY', ''),
    agentKey: r.string('AGENT_KEY', ''),
    agentKeyPerTaskOnly: r.bool('AGENT_KEY_PER_TASK_ONLY', false),
    dispatcherName: r.string('DISPATCHER_NAME', 'local'),
    dispatcherInstance: r.string('DISPATCHER_INSTANCE', hostname()),
    dispatcherPublicUrl: r.url('DISPATCHER_PUBLIC_URL', `http://127.0.0.1:${dispatcherPort}`)!,
    dispatcherCloud: r.string('DISPATCHER_CLOUD', 'local'),
    dispatcherLabels: r.stringMap('DISPATCHER_LABELS'),
    dispatcherBackends: r.list<RuntimeBackendName>('DISPATCHER_BACKENDS', ['local'], RUNTIME_BACKEND_NAMES),
    heartbeatIntervalSeconds: r.int('HEARTBEAT_INTERVAL_SECONDS', 30, 1, 3600),
    dispatcherReplicaHeartbeatSeconds: r.int('DISPATCHER_REPLICA_HEARTBEAT_SECONDS', 10, 1, 3600),
    dispatcherReplicaLostSeconds: r.int('DISPATCHER_REPLICA_LOST_SECONDS', 60, 2, 86400),
    controllerUrl: r.url('CONTROLLER_URL', role === 'all' ? controllerPublic : null),
    controllerToken: r.optional('CONTROLLER_TOKEN'),
    controllerClientId: r.optional('CONTROLLER_CLIENT_ID'),
    controllerClientSecret: r.optional('CONTROLLER_CLIENT_SECRET'),
    maxConcurrentTasks: r.int('MAX_CONCURRENT_TASKS', 10, 1, 10000),
    startGraceSeconds: r.int('START_GRACE_SECONDS', 120, 1, 86400),
    callbackMaxAgeSeconds: r.int('CALLBACK_MAX_AGE_SECONDS', 86400, 1, 30 * 86400),
    localEngine: r.oneOf<LocalEngine>('LOCAL_ENGINE', 'process', ['process', 'docker']),
    dockerHost: r.optional('DOCKER_HOST'),
    dockerNetwork: r.string('DOCKER_NETWORK', 'host'),
    localImageCommands: r.stringMap('LOCAL_IMAGE_COMMANDS'),
    kubeNamespace: r.string('KUBE_NAMESPACE', 'default'),
    kubeconfig: r.optional('KUBECONFIG'),
    kubeApiQps: r.int('KUBE_API_QPS', 50, 1, 10000),
    kubeApiBurst: r.int('KUBE_API_BURST', 100, 1, 20000),
    jobTtlSecondsAfterFinished: r.int('JOB_TTL_SECONDS_AFTER_FINISHED', 600, 0, 30 * 86400),
    agentIsolation,
    kubernetes: readKubernetesSettings(r, env),
    agentFloor: readAgentFloor(r, agentIsolation),
    agentPort: r.int('AGENT_PORT', 0, 0, 65535) || null,
    agentDispatcherUrl: '',
    agentApiOnMainPort: r.bool('AGENT_API_ON_MAIN_PORT', true),
    agentSecretAllowlist: r.words('AGENT_SECRET_ALLOWLIST'),
    agentSecretsFile: r.optional('AGENT_SECRETS_FILE'),
    warmPools: [],
    streamsPerPrincipal: r.int('STREAMS_PER_PRINCIPAL', 20, 1, 100000),
    streamLeaseSeconds: r.int('STREAM_LEASE_SECONDS', 60, 3, 3600),
    streamsPerReplica: r.int('STREAMS_PER_REPLICA', 1100, 1, 1000000),
    streamBufferBytes: r.int('STREAM_BUFFER_BYTES', 1048576, 65536, 1073741824),
    httpServer: readHttpServerSettings(r),
    webhookRefusalsPerMinute: r.int('WEBHOOK_REFUSALS_PER_MINUTE', 30, 1, 1000000),
  };
  config.warmPools = readWarmPools(r, config.dispatcherBackends);
  config.agentDispatcherUrl = r.url('AGENT_PUBLIC_URL', null) ?? agentUrlOf(config.dispatcherPublicUrl, config.agentPort);
  if (config.agentPort !== null && config.agentPort === dispatcherPort && dispatcherPort !== 0) {
    r.problems.push('AGENT_PORT must differ from DISPATCHER_PORT (agents get a port of their own)');
  }

  if (config.dispatcherReplicaLostSeconds < 2 * config.dispatcherReplicaHeartbeatSeconds) {
    r.problems.push('DISPATCHER_REPLICA_LOST_SECONDS must be at least twice DISPATCHER_REPLICA_HEARTBEAT_SECONDS (a replica is lost after missing several heartbeats)');
  }

  const needed = [
    ...(role !== 'dispatcher' ? CONTROLLER_SECRETS : []),
    ...(role !== 'controller' ? DISPATCHER_SECRETS : []),
  ];
  for (const name of new Set(needed)) {
    if (!r.raw(name) && !OPTIONAL_IN_PRODUCTION.has(name)) {
      r.problems.push(
        production
          ? `${name} is required when NODE_ENV=production`
          : `${name} is not set (embedded mode generates it under DATA_DIR)`,
      );
    }
  }

  if (r.problems.length > 0) throw new ConfigError(r.problems);
  return config;
}

const TRACE_URL_TEMPLATE: z.ZodType<string | null> = z.string().trim().regex(/^https?:\/\/\S+$/).refine((value) => value.includes('{trace_id}'));

/** DISPATCHER_PUBLIC_URL with the agent port in place of its own, when agents have one. */
function agentUrlOf(dispatcherPublicUrl: string, agentPort: number | null): string {
  if (agentPort === null) return dispatcherPublicUrl;
  const url = new URL(dispatcherPublicUrl);
  url.port = String(agentPort);
  return url.toString().replace(/\/+$/, '');
}

/**
 * Keep-alive above the idle time-out of common load balancers and proxies (60 s for AWS ALB
 * and nginx), so the balancer, not Node, closes an idle connection; headers a second longer.
 */
function readHttpServerSettings(r: Reader): HttpServerSettings {
  const keepAliveSeconds = r.int('HTTP_KEEP_ALIVE_TIMEOUT_SECONDS', 65, 1, 3600);
  const headersSeconds = r.int('HTTP_HEADERS_TIMEOUT_SECONDS', keepAliveSeconds + 1, 1, 3600);
  if (headersSeconds <= keepAliveSeconds) r.problems.push('HTTP_HEADERS_TIMEOUT_SECONDS must be above HTTP_KEEP_ALIVE_TIMEOUT_SECONDS');
  return {
    keepAliveTimeoutMs: keepAliveSeconds * 1000,
    headersTimeoutMs: headersSeconds * 1000,
    requestTimeoutMs: r.int('HTTP_REQUEST_TIMEOUT_SECONDS', 300, 1, 86400) * 1000,
    maxConnections: r.int('HTTP_MAX_CONNECTIONS', 10000, 1, 1000000),
  };
}

function parseTrustProxy(value: string): boolean | number | string {
  if (value === 'true') return true;
  if (value === 'false') return false;
  return /^\d+$/.test(value) ? Number(value) : value;
}
