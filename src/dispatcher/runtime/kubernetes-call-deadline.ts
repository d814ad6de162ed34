import { AsyncLocalStorage } from 'node:async_hooks';
import type { Middleware } from '@kubernetes/client-node';
import { Counter } from 'prom-client';
import { roleRegistry } from '../../shared/metrics/metrics';

/** KUBE_API_TIMEOUT_SECONDS' default; docs/dispatcher.md says why 30 s. */
export const DEFAULT_API_TIMEOUT_SECONDS = 30;

export const kubeApiTimeouts = new Counter({
  name: 'dispatcher_kube_api_timeouts_total',
  help: 'Requests to the Kubernetes API server aborted for want of an answer within KUBE_API_TIMEOUT_SECONDS (watches and log follows have no such limit), by verb and resource.',
  labelNames: ['verb', 'resource'] as const,
  registers: [roleRegistry('dispatcher')],
});

/**
 * A request the API server accepted and never answered. It carries a network code, so it is
 * handled as a refused or reset connection is: retried by the client, then reported as the
 * API server being unavailable (a start waits the outage out).
 */
export class KubeApiTimeoutError extends Error {
  readonly code = 'ETIMEDOUT';

  constructor(readonly verb: string, readonly resource: string, seconds: number) {
    super(`no answer from the Kubernetes API server to ${verb} ${resource} within ${seconds} s (KUBE_API_TIMEOUT_SECONDS); the request was aborted`);
    this.name = 'KubeApiTimeoutError';
  }
}

interface Deadline {
  controller: AbortController;
  verb: string;
  resource: string;
}

/**
 * One time-out per API request, as client-go's request timeout. `run` gives the request an
 * AbortSignal through async context; `middleware` (installed on every API client) hands it to
 * the HTTP request, so an expired request is aborted and its connection closed, not left open.
 * Watches and log follows make their own requests, outside these clients: they keep their
 * own liveness (the server-side timeoutSeconds and the silence check; a follow is long by design).
 */
export class CallDeadlines {
  private readonly current = new AsyncLocalStorage<Deadline>();

  constructor(readonly timeoutMs: number) {
    if (!(timeoutMs > 0)) throw new Error(`an API call time-out must be above 0 ms (got ${timeoutMs})`);
  }

  /** Runs `request` under its own deadline; past it, it rejects with KubeApiTimeoutError whatever stage it is at. */
  async run<T>(request: () => Promise<T>): Promise<T> {
    const deadline: Deadline = { controller: new AbortController(), verb: 'unknown', resource: 'unknown' };
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        kubeApiTimeouts.inc({ verb: deadline.verb, resource: deadline.resource });
        const error = new KubeApiTimeoutError(deadline.verb, deadline.resource, this.timeoutMs / 1000);
        deadline.controller.abort(error);
        reject(error);
      }, this.timeoutMs);
    });
    try {
      // The race covers a request stalled before it reached the socket (credentials being fetched).
      return await Promise.race([this.current.run(deadline, request), expired]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The client middleware that gives each request the signal of the call it belongs to. */
  middleware(): Middleware {
    return {
      pre: async (context) => {
        const deadline = this.current.getStore();
        if (deadline) {
          Object.assign(deadline, describeRequest(context.getHttpMethod(), context.getUrl()));
          context.setSignal(deadline.controller.signal);
        }
        return context;
      },
      post: async (response) => response,
    };
  }
}

/** Verb and resource of a REST request, as the API server names them: `create jobs`, `get pods/log`, `list networkpolicies`. */
export function describeRequest(method: string, url: string): { verb: string; resource: string } {
  const segments = new URL(url).pathname.split('/').filter(Boolean);
  // /api/v1/... (core) or /apis/<group>/<version>/...
  const rest = segments[0] === 'api' ? segments.slice(2) : segments.slice(3);
  if (rest[0] === 'namespaces' && rest.length > 2) rest.splice(0, 2);
  const [resource = 'unknown', name, sub] = rest;
  const verbs: Record<string, string> = { GET: name ? 'get' : 'list', POST: 'create', PUT: 'update', PATCH: 'patch', DELETE: 'delete' };
  return { verb: verbs[method.toUpperCase()] ?? method.toLowerCase(), resource: sub ? `${resource}/${sub}` : resource };
}
