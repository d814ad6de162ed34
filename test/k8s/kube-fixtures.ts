import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { KubeConfig } from '@kubernetes/client-node';
import { KubernetesRuntime, KubernetesRuntimeOptions } from '../../src/dispatcher/runtime/kubernetes-runtime';
import { AgentSpec, AgentState } from '../../src/dispatcher/runtime/runtime';
import { DEFAULT_AGENT_ISOLATION } from '../../src/shared/task-protocol/isolation';
import { waitFor as waitUntil } from '../harness/wait';
import { KubeApiServer } from './kube-api-server';

export const TOKEN = 'test-service-account-token';

// The backend's retry and watch warnings are expected here; TEST_LOG_LEVEL shows them.
if (!process.env.TEST_LOG_LEVEL) Logger.overrideLogger(['error']);

/** A kubeconfig built in code (loadFromOptions) that points at the test server. */
export function kubeConfigFor(server: KubeApiServer, token = TOKEN): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'test', server: server.url, skipTLSVerify: true }],
    users: [{ name: 'test', token }],
    contexts: [{ name: 'test', cluster: 'test', user: 'test', namespace: 'default' }],
    currentContext: 'test',
  });
  return kc;
}

export interface BackendUnderTest {
  backend: KubernetesRuntime;
  /** Every state the backend reported, per task. */
  states: Map<string, AgentState[]>;
  /** Waits until the task's latest reported state has this phase. */
  waitForPhase(taskId: string, phase: AgentState['phase'], timeoutMs?: number): Promise<AgentState>;
  /** Waits until the task's latest reported state equals `state`. */
  waitForState(taskId: string, state: AgentState, timeoutMs?: number): Promise<void>;
}

export function startBackend(server: KubeApiServer, options: Partial<KubernetesRuntimeOptions> = {}): BackendUnderTest {
  const backend = new KubernetesRuntime({
    namespace: 'default',
    dispatcherName: 'test-dispatcher',
    ttlSecondsAfterFinished: 600,
    startGraceSeconds: 1,
    qps: 100,
    kubeConfig: kubeConfigFor(server),
    retry: { attempts: 5, baseDelayMs: 20, maxDelayMs: 2000 },
    watchRetryDelayMs: 50,
    // As a dispatcher is configured by default.
    shaping: { doNotDisrupt: true, backoffLimit: 6, podTemplate: null },
    ...options,
  });
  const states = new Map<string, AgentState[]>();
  backend.onStateChange((taskId, state) => states.set(taskId, [...(states.get(taskId) ?? []), state]));
  return {
    backend,
    states,
    waitForPhase: async (taskId, phase, timeoutMs = 8000) => {
      await waitFor(() => states.get(taskId)?.at(-1)?.phase === phase, timeoutMs, () => `task ${taskId} to reach ${phase} (saw ${JSON.stringify(states.get(taskId))})`);
      return states.get(taskId)!.at(-1)!;
    },
    waitForState: (taskId, state, timeoutMs = 8000) =>
      waitFor(() => JSON.stringify(states.get(taskId)?.at(-1)) === JSON.stringify(state), timeoutMs, () => `task ${taskId} to reach ${JSON.stringify(state)} (saw ${JSON.stringify(states.get(taskId))})`),
  };
}

export function makeSpec(over: Partial<AgentSpec> = {}): AgentSpec {
  const taskId = over.taskId ?? randomUUID();
  return {
    taskId,
    image: 'registry.example/agents/echo:1',
    namespace: '',
    env: { TASK_ID: taskId, DISPATCHER_URL: 'http://dispatcher.test:8080', AGENT_KEY: `key-for-${taskId}` },
    resources: { cpu: '250m', memory: '256Mi' },
    ports: [],
    timeoutSeconds: 300,
    isolation: DEFAULT_AGENT_ISOLATION,
    ...over,
  };
}

/** Waits until `check` holds, polling every 20 ms (the test server answers at once). */
export async function waitFor(check: () => boolean, timeoutMs = 8000, what: string | (() => string) = 'a condition'): Promise<void> {
  await waitUntil(() => check(), timeoutMs, what, 20);
}

/**
 * A fresh test API server for each test and the backends a test starts on it (`start`, with
 * `defaults` under the test's own options), all closed after the test. `server()` is the
 * current test's server (call it in a `beforeEach` declared after this).
 */
export function backendsPerTest(defaults: Partial<KubernetesRuntimeOptions> = {}) {
  let server: KubeApiServer;
  const running: BackendUnderTest[] = [];
  beforeEach(async () => {
    server = await KubeApiServer.start({ token: TOKEN });
  });
  afterEach(async () => {
    for (const under of running.splice(0)) await under.backend.close();
    await server.close();
  });
  return {
    server: () => server,
    /** The test's server closed and started again with `options` (its backends are the test's to start after). */
    restartServer: async (options: Omit<Parameters<typeof KubeApiServer.start>[0], 'token'>) => {
      await server.close();
      server = await KubeApiServer.start({ token: TOKEN, ...options });
      return server;
    },
    start: (options: Partial<KubernetesRuntimeOptions> = {}): BackendUnderTest => {
      const under = startBackend(server, { ...defaults, ...options });
      running.push(under);
      return under;
    },
  };
}
