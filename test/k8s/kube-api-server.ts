import * as http from 'node:http';
import { Job } from 'kubernetes-models/batch/v1';
import { Pod } from 'kubernetes-models/v1';
import { AddressInfo } from 'node:net';
import { JobSimulator, Propagation } from './kube-job-controller';
import { networkPolicyProblems } from './kube-network-policies';
import { restrictedPodSecurity } from './kube-admission';
import { applyPatch } from './kube-patch';
import { allows, PolicyRule, verbOf } from './kube-rbac';
import { KubeObject, KubeStore, ListQuery, matches, Resource, StoredEvent } from './kube-store';

export interface KubeApiServerOptions {
  /** Bearer token every request must carry; unset: no authentication. */
  token?: string;
  namespaces?: string[];
  bookmarkIntervalMs?: number;
  /** Compacts the store this often, as etcd does: a watch resumed from before it answers 410 Gone. */
  compactEveryMs?: number;
  /** RBAC per verb: the token may do only what these rules grant (e.g. the chart's Role, kube-rbac.ts); unset: anything. */
  rules?: PolicyRule[];
  /**
   * A server-side rate limit, as API Priority and Fairness sheds load: requests beyond
   * `maxRequestsPerSecond` (with `maxBurst` at once, default the same number) answer 429
   * TooManyRequests with Retry-After: 1. Watches are long-running and not counted.
   */
  maxRequestsPerSecond?: number;
  maxBurst?: number;
  /** Every Job's pod starts running as soon as it is made (a cluster with room and a warm image cache). */
  runPods?: boolean;
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  status: number;
}

interface Fault {
  remaining: number;
  match: (method: string, path: string) => boolean;
  apply: (res: http.ServerResponse, req: http.IncomingMessage) => void;
}

interface Delay {
  remaining: number;
  match: (method: string, path: string) => boolean;
  ms: number;
}

const KINDS: Record<Resource, { kind: string; apiVersion: string; group: string }> = {
  jobs: { kind: 'Job', apiVersion: 'batch/v1', group: 'batch' },
  pods: { kind: 'Pod', apiVersion: 'v1', group: '' },
  secrets: { kind: 'Secret', apiVersion: 'v1', group: '' },
  events: { kind: 'Event', apiVersion: 'v1', group: '' },
  networkpolicies: { kind: 'NetworkPolicy', apiVersion: 'networking.k8s.io/v1', group: 'networking.k8s.io' },
  runtimeclasses: { kind: 'RuntimeClass', apiVersion: 'node.k8s.io/v1', group: 'node.k8s.io' },
};
const CORE_PATH = /^\/api\/v1\/(?:namespaces\/([^/]+)\/)?(pods|secrets|events)(?:\/([^/]+)(?:\/(log))?)?\/?$/;
const BATCH_PATH = /^\/apis\/batch\/v1\/(?:namespaces\/([^/]+)\/)?(jobs)(?:\/([^/]+))?\/?$/;
const NETWORKING_PATH = /^\/apis\/networking\.k8s\.io\/v1\/(?:namespaces\/([^/]+)\/)?(networkpolicies)(?:\/([^/]+))?\/?$/;
/** Cluster-scoped: the empty group stands for "no namespace". */
const NODE_PATH = /^\/apis\/node\.k8s\.io\/v1\/()(runtimeclasses)(?:\/([^/]+))?\/?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * A Kubernetes API server for tests, on loopback over plain HTTP: the real REST paths,
 * Status errors, resourceVersions, label and field selectors and watch streams for Jobs,
 * Pods, Secrets and Events, plus pod logs. `jobs` drives what the cluster would do;
 * the fault methods make it throttle, fail, reset connections or expire watches.
 */
export class KubeApiServer {
  readonly store = new KubeStore();
  readonly jobs = new JobSimulator(this.store);
  readonly requests: RecordedRequest[] = [];
  /** Pod log follows (`?follow=true`) opened so far, and those open now. */
  logFollowsOpened = 0;
  readonly openLogFollows = new Set<http.ServerResponse>();
  readonly namespaces: Set<string>;
  private readonly faults: Fault[] = [];
  private readonly delays: Delay[] = [];
  private readonly watches = new Map<http.ServerResponse, Resource>();
  private readonly goneWatches = new Map<Resource, number>();
  /** How many watches were answered 410 Gone. */
  expiredWatches = 0;
  private readonly muted = new WeakSet<http.ServerResponse>();
  /** Namespaces where RBAC grants the token nothing: every request there is 403. */
  private readonly forbidden = new Set<string>();
  private compaction: NodeJS.Timeout | undefined;
  private server!: http.Server;
  private limitTokens = 0;
  private limitRefilled = performance.now();
  /** How many requests the server-side rate limit answered 429. */
  throttled = 0;
  /** Requests (not watches, not log follows) received and not yet answered: now, and the most at any moment. */
  openRequests = 0;
  peakOpenRequests = 0;
  /**
   * With a rate limit: when each request it counted reached it (performance.now()), and which
   * it answered 429, so a benchmark can tell which requests met the limit and how fast they came.
   */
  readonly limited: { at: number; method: string; path: string; throttled: boolean }[] = [];
  /** Requests `hangNext` accepted and never answered, and those of them whose connection is still open. */
  hungRequests = 0;
  private readonly hung = new Set<http.IncomingMessage>();
  url = '';

  private constructor(private readonly options: KubeApiServerOptions) {
    this.namespaces = new Set(options.namespaces ?? ['default']);
    this.limitTokens = options.maxBurst ?? options.maxRequestsPerSecond ?? 0;
    this.jobs.runPods = options.runPods ?? false;
  }

  static async start(options: KubeApiServerOptions = {}): Promise<KubeApiServer> {
    const api = new KubeApiServer(options);
    api.server = http.createServer((req, res) => {
      api.handle(req, res).catch((error: unknown) => api.status(res, 500, 'InternalError', String(error)));
    });
    // A backlog for a burst of new connections (Node's default, 511, resets some when the loop is busy).
    await new Promise<void>((resolve) => api.server.listen(0, '127.0.0.1', 4096, resolve));
    api.url = `http://127.0.0.1:${(api.server.address() as AddressInfo).port}`;
    if (options.compactEveryMs) {
      api.compaction = setInterval(() => api.store.compact(), options.compactEveryMs);
      api.compaction.unref();
    }
    return api;
  }

  async close(): Promise<void> {
    clearInterval(this.compaction);
    this.jobs.close();
    this.dropWatches();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** A kubeconfig (YAML is a superset of JSON) pointing at this server. */
  kubeconfig(namespace = 'default'): string {
    return JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      // client-node refuses plain http unless told TLS checks are off.
      clusters: [{ name: 'test', cluster: { server: this.url, 'insecure-skip-tls-verify': true } }],
      users: [{ name: 'test', user: this.options.token ? { token: this.options.token } : {} }],
      contexts: [{ name: 'test', context: { cluster: 'test', user: 'test', namespace } }],
      'current-context': 'test',
    });
  }

  /** The next `count` matching requests answer `status` (429 carries Retry-After). */
  failNext(count: number, status: number, options: { retryAfterSeconds?: number; match?: (method: string, path: string) => boolean } = {}): void {
    this.faults.push({
      remaining: count,
      match: options.match ?? (() => true),
      apply: (res) => {
        const reason = status === 429 ? 'TooManyRequests' : status === 503 ? 'ServiceUnavailable' : 'InternalError';
        const headers: Record<string, string> = options.retryAfterSeconds !== undefined ? { 'Retry-After': String(options.retryAfterSeconds) } : {};
        this.status(res, status, reason, status === 429 ? 'Too many requests, please try again later.' : 'the server is having trouble', headers);
      },
    });
  }

  /** RBAC: the token may do nothing in `namespace` (no Role bound there). */
  forbidNamespace(namespace: string): void {
    this.forbidden.add(namespace);
  }

  /** Pod Security admission enforces `restricted` in `namespace` (its `pod-security.kubernetes.io/enforce` label). */
  enforceRestrictedPodSecurity(namespace: string): void {
    this.jobs.podAdmission.set(namespace, restrictedPodSecurity);
  }

  /** Ends every fault still pending (the outage is over). */
  recover(): void {
    this.faults.length = 0;
  }

  /** The next `count` matching requests lose their connection without an answer. */
  resetNext(count: number, match: (method: string, path: string) => boolean = () => true): void {
    this.faults.push({ remaining: count, match, apply: (_res, req) => req.socket.destroy() });
  }

  /**
   * The next `count` matching requests are read and then never answered, not even at `recover`
   * (a server that accepts and hangs): only the client can end them, by closing the connection.
   */
  hangNext(count: number, match: (method: string, path: string) => boolean = () => true): void {
    this.faults.push({
      remaining: count,
      match,
      apply: (_res, req) => {
        this.hungRequests += 1;
        this.hung.add(req);
        req.socket.once('close', () => this.hung.delete(req));
      },
    });
  }

  /** Hung requests whose connection the client has not closed. */
  openHungRequests(): number {
    return this.hung.size;
  }

  /** The next `count` matching requests are served as usual, but only after `ms` (a slow API server). */
  delayNext(count: number, ms: number, match: (method: string, path: string) => boolean = () => true): void {
    this.delays.push({ remaining: count, match, ms });
  }

  /** Every open watch stream goes silent (no event, no bookmark) but stays open: a half-dead connection. */
  muteWatches(): void {
    for (const res of this.watches.keys()) this.muted.add(res);
  }

  /** Cuts every open watch stream mid-flight. */
  dropWatches(): void {
    for (const res of this.watches.keys()) res.destroy();
    this.watches.clear();
  }

  /** The next `count` watches of each named resource answer the ERROR event 410 Gone (resourceVersion too old). */
  expireNextWatches(count: number, ...resources: Resource[]): void {
    for (const resource of resources) this.goneWatches.set(resource, (this.goneWatches.get(resource) ?? 0) + count);
  }

  /** Watches open now, of the named resources only when some are named. */
  openWatches(...resources: Resource[]): number {
    if (resources.length === 0) return this.watches.size;
    return [...this.watches.values()].filter((resource) => resources.includes(resource)).length;
  }

  /** Writes answered so far (any status but 429), by verb and resource: `create jobs`, `patch jobs`, `delete secrets`; of one namespace when named. */
  writes(namespace?: string): Map<string, number> {
    const counts = new Map<string, number>();
    for (const request of this.requests) {
      if (request.method === 'GET' || request.status === 429) continue;
      if (namespace && !request.path.includes(`/namespaces/${namespace}/`)) continue;
      const route = CORE_PATH.exec(request.path) ?? BATCH_PATH.exec(request.path) ?? NETWORKING_PATH.exec(request.path) ?? NODE_PATH.exec(request.path);
      const key = `${verbOf(request.method, Boolean(route?.[3]), false)} ${route?.[2] ?? request.path}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    return counts;
  }

  /** The server-side rate limit: false when this request is over it. */
  private withinRateLimit(): boolean {
    const rate = this.options.maxRequestsPerSecond;
    if (!rate) return true;
    const now = performance.now();
    this.limitTokens = Math.min(this.options.maxBurst ?? rate, this.limitTokens + ((now - this.limitRefilled) / 1000) * rate);
    this.limitRefilled = now;
    if (this.limitTokens < 1) return false;
    this.limitTokens -= 1;
    return true;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const method = req.method ?? 'GET';
    res.on('finish', () => this.requests.push({ method, path: url.pathname, query: url.searchParams, status: res.statusCode }));
    if (url.searchParams.get('watch') !== 'true' && url.searchParams.get('watch') !== '1' && url.searchParams.get('follow') !== 'true') {
      this.openRequests += 1;
      this.peakOpenRequests = Math.max(this.peakOpenRequests, this.openRequests);
      res.once('close', () => (this.openRequests -= 1));
    }
    const body = await readBody(req);
    if (this.options.token && req.headers.authorization !== `Bearer ${this.options.token}`) {
      return this.status(res, 401, 'Unauthorized', 'Unauthorized');
    }
    const delay = this.delays.find((d) => d.remaining > 0 && d.match(method, url.pathname));
    if (delay) {
      delay.remaining -= 1;
      await new Promise((resolve) => setTimeout(resolve, delay.ms));
    }
    if (this.options.maxRequestsPerSecond && !['1', 'true'].includes(url.searchParams.get('watch') ?? '')) {
      const within = this.withinRateLimit();
      this.limited.push({ at: performance.now(), method, path: url.pathname, throttled: !within });
      if (!within) {
        this.throttled += 1;
        return this.status(res, 429, 'TooManyRequests', 'Too many requests, please try again later.', { 'Retry-After': '1' });
      }
    }
    const fault = this.faults.find((f) => f.remaining > 0 && f.match(method, url.pathname));
    if (fault) {
      fault.remaining -= 1;
      return fault.apply(res, req);
    }
    if (url.pathname === '/version') {
      return this.json(res, 200, { major: '1', minor: '33', gitVersion: 'v1.33.0-test', platform: 'linux/amd64' });
    }
    const route = CORE_PATH.exec(url.pathname) ?? BATCH_PATH.exec(url.pathname) ?? NETWORKING_PATH.exec(url.pathname) ?? NODE_PATH.exec(url.pathname);
    if (!route) return this.status(res, 404, 'NotFound', 'the server could not find the requested resource');
    const [, namespace, resource, name, sub] = route as unknown as [string, string | undefined, Resource, string | undefined, string | undefined];
    const verb = verbOf(method, Boolean(name), ['1', 'true'].includes(url.searchParams.get('watch') ?? ''));
    const authorized = !this.options.rules || allows(this.options.rules, verb, KINDS[resource].group, sub ? `${resource}/${sub}` : resource);
    if ((namespace && this.forbidden.has(namespace)) || !authorized) {
      const group = KINDS[resource].group;
      return this.status(res, 403, 'Forbidden', `${resource}${group ? `.${group}` : ''} is forbidden: User "system:serviceaccount:agent-tasks:dispatcher" cannot ${verb} resource "${resource}" in API group "${group}" in the namespace "${namespace}"`, {}, { kind: resource, group });
    }
    if (namespace && !this.namespaces.has(namespace) && method !== 'GET') {
      return this.status(res, 404, 'NotFound', `namespaces "${namespace}" not found`, {}, { name: namespace, kind: 'namespaces' });
    }
    const query: ListQuery = {
      namespace,
      labelSelector: url.searchParams.get('labelSelector') ?? undefined,
      fieldSelector: url.searchParams.get('fieldSelector') ?? undefined,
    };
    const watch = ['1', 'true'].includes(url.searchParams.get('watch') ?? '');
    if (method === 'GET' && sub === 'log' && namespace && name) return this.podLog(res, namespace, name, url.searchParams);
    if (method === 'GET' && name && namespace !== undefined) return this.read(res, resource, namespace, name);
    if (method === 'GET' && watch) return this.watch(req, res, resource, query, url.searchParams);
    if (method === 'GET') return this.list(res, resource, query, url.searchParams);
    if (method === 'POST' && namespace !== undefined && !name) return this.create(res, resource, namespace, body);
    if (method === 'PATCH' && namespace && name) return this.patch(res, resource, namespace, name, req.headers['content-type'] ?? '', body);
    if (method === 'DELETE' && namespace !== undefined && name) return this.remove(res, resource, namespace, name, url.searchParams, body);
    return this.status(res, 405, 'MethodNotAllowed', `the server does not allow this method on the requested resource`);
  }

  private read(res: http.ServerResponse, resource: Resource, namespace: string, name: string): void {
    const object = this.store.get(resource, namespace, name);
    if (!object) return this.notFound(res, resource, name);
    this.json(res, 200, object);
  }

  private list(res: http.ServerResponse, resource: Resource, query: ListQuery, params: URLSearchParams): void {
    // In key order (namespace, then name) as etcd returns them, and a continue token that names the
    // last key given: an object changed between two pages does not move across them.
    const keyOf = (object: KubeObject) => `${object.metadata.namespace ?? ''}/${object.metadata.name}`;
    const all = this.store.list(resource, query).sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : keyOf(a) > keyOf(b) ? 1 : 0));
    const after = params.get('continue') ? Buffer.from(params.get('continue')!, 'base64url').toString() : null;
    const found = after === null ? 0 : all.findIndex((object) => keyOf(object) > after);
    const start = found === -1 ? all.length : found;
    const limit = Number(params.get('limit') ?? 0) || all.length;
    const items = all.slice(start, start + limit);
    const more = start + limit < all.length;
    this.json(res, 200, {
      kind: `${KINDS[resource].kind}List`,
      apiVersion: KINDS[resource].apiVersion,
      metadata: { resourceVersion: String(this.store.currentRevision), ...(more ? { continue: Buffer.from(keyOf(items[items.length - 1])).toString('base64url') } : {}) },
      items,
    });
  }

  private create(res: http.ServerResponse, resource: Resource, namespace: string, body: string): void {
    let object: KubeObject;
    try {
      object = JSON.parse(body) as KubeObject;
    } catch {
      return this.status(res, 400, 'BadRequest', 'the request body is not JSON');
    }
    const meta = object.metadata ?? ({} as KubeObject['metadata']);
    const problems = this.admit(resource, object, namespace);
    if (problems.length > 0) {
      return this.status(res, 422, 'Invalid', `${KINDS[resource].kind} "${meta.name}" is invalid: ${problems.join(', ')}`, {}, { name: meta.name, kind: resource });
    }
    if (meta.name && this.store.get(resource, namespace, meta.name)) {
      return this.status(res, 409, 'AlreadyExists', `${resource}${KINDS[resource].group ? `.${KINDS[resource].group}` : ''} "${meta.name}" already exists`, {}, { name: meta.name, kind: resource });
    }
    if (resource === 'secrets') convertStringData(object);
    const created = this.store.create(resource, { ...object, metadata: { ...meta, namespace } });
    if (resource === 'jobs') this.jobs.jobCreated(created);
    this.jobs.checkOwners(resource, created);
    this.json(res, 201, this.store.get(resource, namespace, created.metadata.name) ?? created);
  }

  /** The admission checks of the real server that a client can get wrong. */
  private admit(resource: Resource, object: KubeObject, namespace: string): string[] {
    const problems: string[] = [];
    const meta = object.metadata ?? {};
    const { kind, apiVersion } = KINDS[resource];
    if (object.kind !== kind || object.apiVersion !== apiVersion) problems.push(`kind/apiVersion must be ${kind} ${apiVersion}`);
    if (!meta.name && !meta.generateName) problems.push('metadata.name: Required value');
    if (meta.name && (!DNS_SUBDOMAIN.test(meta.name) || meta.name.length > (resource === 'jobs' ? 63 : 253))) {
      problems.push(`metadata.name: Invalid value: "${meta.name}": a lowercase RFC 1123 name`);
    }
    if (meta.namespace && meta.namespace !== namespace) problems.push('metadata.namespace: Invalid value: does not match the namespace of the request');
    if (resource === 'jobs') {
      const spec = object.spec as { template?: { spec?: { restartPolicy?: string; containers?: unknown[] } } } | undefined;
      const policy = spec?.template?.spec?.restartPolicy;
      if (policy !== 'Never' && policy !== 'OnFailure') problems.push('spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"');
      if (!spec?.template?.spec?.containers?.length) problems.push('spec.template.spec.containers: Required value');
    }
    if (resource === 'networkpolicies') problems.push(...networkPolicyProblems(object));
    if (resource === 'jobs' || resource === 'pods') problems.push(...schemaProblems(resource, object));
    return problems;
  }

  /** PATCH of metadata (owner references, labels); the status of Jobs and Pods stays the simulator's. */
  private patch(res: http.ServerResponse, resource: Resource, namespace: string, name: string, contentType: string, body: string): void {
    const current = this.store.get(resource, namespace, name);
    if (!current) return this.notFound(res, resource, name);
    const patched = applyPatch(current, contentType, body);
    if (typeof patched === 'string') return this.status(res, contentType.includes('patch') ? 422 : 415, contentType.includes('patch') ? 'Invalid' : 'UnsupportedMediaType', patched);
    const updated = this.store.update(resource, namespace, name, (object) => {
      Object.assign(object, { ...patched, metadata: { ...patched.metadata, uid: object.metadata.uid, resourceVersion: object.metadata.resourceVersion }, status: object.status });
    })!;
    if (resource === 'jobs') this.jobs.jobUpdated(current, updated);
    this.jobs.checkOwners(resource, updated);
    this.json(res, 200, updated);
  }

  private remove(res: http.ServerResponse, resource: Resource, namespace: string, name: string, params: URLSearchParams, body: string): void {
    let options: { propagationPolicy?: Propagation } = {};
    try {
      options = body ? (JSON.parse(body) as typeof options) : {};
    } catch {
      return this.status(res, 400, 'BadRequest', 'the request body is not JSON');
    }
    const propagation = (params.get('propagationPolicy') ?? options.propagationPolicy ?? (resource === 'jobs' ? 'Orphan' : 'Background')) as Propagation;
    const removed = resource === 'jobs'
      ? this.jobs.deleteJob(namespace, name, propagation)
      : resource === 'pods' ? this.jobs.deletePod(namespace, name) : this.store.remove(resource, namespace, name);
    if (!removed) return this.notFound(res, resource, name);
    this.json(res, 200, {
      kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success',
      details: { name, group: KINDS[resource].group, kind: resource, uid: removed.metadata.uid },
    });
  }

  private podLog(res: http.ServerResponse, namespace: string, name: string, params: URLSearchParams): void {
    const pod = this.store.get('pods', namespace, name);
    if (!pod) return this.notFound(res, 'pods', name);
    const state = ((pod.status as { containerStatuses?: { state?: Record<string, { reason?: string }> }[] }).containerStatuses ?? [])[0]?.state;
    if (!state || state.waiting) {
      const reason = state?.waiting?.reason ?? 'ContainerCreating';
      return this.status(res, 400, 'BadRequest', `container "agent" in pod "${name}" is waiting to start: ${reason}`);
    }
    let lines = this.jobs.logsOf(namespace, name).split('\n');
    if (lines.at(-1) === '') lines.pop();
    const tail = params.get('tailLines');
    if (tail !== null) lines = lines.slice(Math.max(0, lines.length - Number(tail)));
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    if (params.get('follow') === 'true') return this.followLog(res, namespace, name, lines.map((line) => `${line}\n`).join(''));
    res.end(lines.map((line) => `${line}\n`).join(''));
  }

  /**
   * `?follow=true`: what the log holds, then what is added to it, until the container ends or
   * the pod is gone, as the kubelet streams it.
   */
  private followLog(res: http.ServerResponse, namespace: string, name: string, first: string): void {
    this.logFollowsOpened += 1;
    this.openLogFollows.add(res);
    res.write(first);
    let sent = this.jobs.logsOf(namespace, name).length;
    const poll = setInterval(() => {
      const pod = this.store.get('pods', namespace, name);
      const text = this.jobs.logsOf(namespace, name);
      if (text.length > sent) res.write(text.slice(sent));
      sent = Math.max(sent, text.length);
      const state = ((pod?.status as { containerStatuses?: { state?: Record<string, unknown> }[] } | undefined)?.containerStatuses ?? [])[0]?.state;
      if (!pod || state?.terminated) res.end();
    }, 50);
    res.once('close', () => {
      clearInterval(poll);
      this.openLogFollows.delete(res);
    });
  }

  private watch(req: http.IncomingMessage, res: http.ServerResponse, resource: Resource, query: ListQuery, params: URLSearchParams): void {
    const from = params.get('resourceVersion');
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
    // The real server answers a watch at once, before any event.
    res.flushHeaders();
    const send = (type: string, object: unknown) => this.muted.has(res) || res.write(`${JSON.stringify({ type, object })}\n`);
    const tooOld = from && from !== '0' && Number(from) < this.store.compactedRevision;
    const gone = this.goneWatches.get(resource) ?? 0;
    if (gone > 0 || tooOld) {
      if (gone > 0) this.goneWatches.set(resource, gone - 1);
      this.expiredWatches += 1;
      send('ERROR', { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: `too old resource version: ${from} (${this.store.compactedRevision})`, reason: 'Expired', code: 410 });
      res.end();
      return;
    }
    this.watches.set(res, resource);
    if (!from || from === '0') {
      for (const object of this.store.list(resource, query)) send('ADDED', object);
    } else {
      for (const event of this.store.since(resource, Number(from), query)) send(event.type, event.object);
    }
    const onChange = (event: StoredEvent) => {
      if (event.resource === resource && matches(event.object, query)) send(event.type, event.object);
    };
    this.store.changes.on('change', onChange);
    const bookmarks = params.get('allowWatchBookmarks') === 'true'
      ? setInterval(() => send('BOOKMARK', { kind: KINDS[resource].kind, apiVersion: KINDS[resource].apiVersion, metadata: { resourceVersion: String(this.store.currentRevision) } }), this.options.bookmarkIntervalMs ?? 5000)
      : undefined;
    const timeout = params.get('timeoutSeconds') ? setTimeout(() => res.end(), Number(params.get('timeoutSeconds')) * 1000) : undefined;
    const stop = () => {
      this.store.changes.off('change', onChange);
      clearInterval(bookmarks);
      clearTimeout(timeout);
      this.watches.delete(res);
    };
    res.on('close', stop);
    req.on('close', stop);
  }

  private notFound(res: http.ServerResponse, resource: Resource, name: string): void {
    const group = KINDS[resource].group;
    this.status(res, 404, 'NotFound', `${resource}${group ? `.${group}` : ''} "${name}" not found`, {}, { name, group, kind: resource });
  }

  private status(res: http.ServerResponse, code: number, reason: string, message: string, headers: Record<string, string> = {}, details?: Record<string, string>): void {
    if (res.headersSent) return void res.destroy();
    res.writeHead(code, { 'Content-Type': 'application/json', ...headers });
    res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, details, code }));
  }

  private json(res: http.ServerResponse, code: number, body: unknown): void {
    res.writeHead(code, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(body));
  }
}

// Compiles the schema validators once, at load: compiled inside a request, they would slow the
// first create enough to reorder what a test sees of the Job controller's timing.
schemaProblems('jobs', { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'warm-up' } as KubeObject['metadata'] });
schemaProblems('pods', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'warm-up' } as KubeObject['metadata'] });

/** The API server's schema validation of a Job or Pod (kubernetes-models): wrong types, missing required fields. */
function schemaProblems(resource: 'jobs' | 'pods', object: KubeObject): string[] {
  try {
    if (resource === 'jobs') new Job(object as never).validate();
    else new Pod(object as never).validate();
    return [];
  } catch (error) {
    return [error instanceof Error ? error.message : String(error)];
  }
}

function convertStringData(secret: KubeObject): void {
  const stringData = secret.stringData as Record<string, string> | undefined;
  if (!stringData) return;
  const data = (secret.data as Record<string, string> | undefined) ?? {};
  for (const [key, value] of Object.entries(stringData)) data[key] = Buffer.from(value).toString('base64');
  secret.data = data;
  delete secret.stringData;
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
