import { KubeApiServer } from './kube-api-server';

/** The test server must answer as a real API server does, or the backend specs prove nothing. */
describe('Kubernetes API test server', () => {
  let server: KubeApiServer;
  const api = (method: string, path: string, body?: unknown, token = 'secret') =>
    fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const patch = (path: string, operations: object[]) =>
    fetch(`${server.url}${path}`, { method: 'PATCH', headers: { authorization: 'Bearer secret', 'content-type': 'application/json-patch+json' }, body: JSON.stringify(operations) });
  const json = async (response: Response | Promise<Response>): Promise<any> => (await response).json();
  const job = (name: string, labels: Record<string, string> = {}) => ({
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, labels },
    spec: { backoffLimit: 0, template: { metadata: { labels }, spec: { restartPolicy: 'Never', containers: [{ name: 'agent', image: 'x' }] } } },
  });
  const jobs = '/apis/batch/v1/namespaces/default/jobs';

  beforeEach(async () => {
    server = await KubeApiServer.start({ token: 'secret' });
  });
  afterEach(() => server.close());

  it('creates a Job with uid and resourceVersion, and its Pod owned by it shortly after, as the Job controller does', async () => {
    const created = await api('POST', jobs, job('a'));
    expect(created.status).toBe(201);
    const body = await json(created);
    expect(body.metadata).toMatchObject({ name: 'a', namespace: 'default', uid: expect.any(String), resourceVersion: expect.stringMatching(/^\d+$/) });
    const podsOfA = () => json(api('GET', '/api/v1/namespaces/default/pods?labelSelector=job-name%3Da'));
    expect((await podsOfA()).items).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 150));
    const pods = await podsOfA();
    expect(pods.kind).toBe('PodList');
    expect(pods.items[0].metadata.ownerReferences).toEqual([expect.objectContaining({ kind: 'Job', uid: body.metadata.uid, controller: true })]);
  });

  it('records FailedCreate Warning events on a Job whose pods are refused, retrying until they are allowed', async () => {
    server.jobs.refusePods('default', 'exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1');
    const created = await json(api('POST', jobs, job('a')));
    // A list comes in key order, as etcd's: oldest first by the server's revision, as a client sorts them.
    const events = async () => (await json(api('GET', '/api/v1/namespaces/default/events?fieldSelector=involvedObject.kind%3DJob%2CinvolvedObject.name%3Da'))).items
      .sort((a: { metadata: { resourceVersion: string } }, b: { metadata: { resourceVersion: string } }) => Number(a.metadata.resourceVersion) - Number(b.metadata.resourceVersion));
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(await events()).toEqual([expect.objectContaining({
      type: 'Warning', reason: 'FailedCreate',
      message: expect.stringMatching(/^Error creating: pods "a-\w+" is forbidden: exceeded quota: q, /),
      involvedObject: expect.objectContaining({ kind: 'Job', name: 'a', uid: created.metadata.uid }),
    })]);
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect((await events()).length).toBeGreaterThanOrEqual(2);
    expect((await json(api('GET', '/api/v1/namespaces/default/pods'))).items).toEqual([]);
    server.jobs.allowPods('default');
    const pods = (await json(api('GET', '/api/v1/namespaces/default/pods?labelSelector=job-name%3Da'))).items;
    expect(pods).toHaveLength(1);
    expect((await events()).at(-1)).toMatchObject({ type: 'Normal', reason: 'SuccessfulCreate' });
  });

  it('answers errors as Status objects: 401, 404, 409, 422 and 429 with Retry-After', async () => {
    expect((await api('GET', jobs, undefined, 'wrong')).status).toBe(401);
    const missing = await api('GET', `${jobs}/nope`);
    expect(missing.status).toBe(404);
    expect(await json(missing)).toMatchObject({ kind: 'Status', status: 'Failure', reason: 'NotFound', code: 404, message: 'jobs.batch "nope" not found' });
    await api('POST', jobs, job('a'));
    expect(await json(api('POST', jobs, job('a')))).toMatchObject({ reason: 'AlreadyExists', code: 409 });
    const always = job('b');
    always.spec.template.spec.restartPolicy = 'Always';
    expect(await json(api('POST', jobs, always))).toMatchObject({ reason: 'Invalid', code: 422 });
    server.failNext(1, 429, { retryAfterSeconds: 3 });
    const throttled = await api('GET', jobs);
    expect(throttled.status).toBe(429);
    expect(throttled.headers.get('retry-after')).toBe('3');
  });

  it('filters lists by label selector and pages them with limit and continue', async () => {
    for (const [name, team] of [['a', 'x'], ['b', 'y'], ['c', 'x']]) await api('POST', jobs, job(name, { team }));
    const names = async (query: string) => (await json(api('GET', `${jobs}?${query}`))).items.map((j: { metadata: { name: string } }) => j.metadata.name);
    expect(await names('labelSelector=team%3Dx')).toEqual(['a', 'c']);
    expect(await names('labelSelector=team%20in%20(y)')).toEqual(['b']);
    expect(await names('labelSelector=team!%3Dx')).toEqual(['b']);
    const first = await json(api('GET', `${jobs}?limit=2`));
    expect(first.items).toHaveLength(2);
    expect(await names(`limit=2&continue=${first.metadata.continue}`)).toEqual(['c']);
  });

  it('deletes dependents per propagationPolicy: Background collects them, Orphan keeps them', async () => {
    const owner = await json(api('POST', jobs, job('a')));
    await api('POST', '/api/v1/namespaces/default/secrets', {
      apiVersion: 'v1', kind: 'Secret', metadata: { name: 'a-key', ownerReferences: [{ apiVersion: 'batch/v1', kind: 'Job', name: 'a', uid: owner.metadata.uid }] }, stringData: { k: 'v' },
    });
    expect(server.store.get('secrets', 'default', 'a-key')!.data).toEqual({ k: Buffer.from('v').toString('base64') });
    await api('POST', jobs, job('b'));
    expect(server.jobs.pod('default', 'b')).toBeDefined();
    expect((await api('DELETE', `${jobs}/b?propagationPolicy=Orphan`)).status).toBe(200);
    expect(server.store.list('pods', { labelSelector: 'job-name=b' })).toHaveLength(1);
    expect(server.jobs.pod('default', 'a')).toBeDefined();
    expect((await api('DELETE', `${jobs}/a`, { propagationPolicy: 'Background' })).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 20));
    // The garbage collector's order: the Secret is gone at once, the pod is Terminating for its grace period.
    expect(server.store.get('secrets', 'default', 'a-key')).toBeUndefined();
    expect(server.store.list('pods', { labelSelector: 'job-name=a' })).toEqual([expect.objectContaining({ metadata: expect.objectContaining({ deletionTimestamp: expect.any(String) }) })]);
    await new Promise((resolve) => setTimeout(resolve, server.jobs.terminationGraceMs + 50));
    expect(server.store.list('pods', { labelSelector: 'job-name=a' })).toHaveLength(0);
  });

  it('answers 422 Invalid for a Job whose spec the schema refuses, as the API server does', async () => {
    const bad = await api('POST', jobs, { ...job('bad'), spec: { ...job('bad').spec, backoffLimit: 'zero' } });
    expect(bad.status).toBe(422);
    expect(await json(bad)).toMatchObject({ kind: 'Status', reason: 'Invalid', message: expect.stringContaining('backoffLimit') });
    const noContainers = await api('POST', jobs, { ...job('empty'), spec: { template: { spec: { restartPolicy: 'Never', containers: [] } } } });
    expect(noContainers.status).toBe(422);
    expect(server.store.list('jobs')).toEqual([]);
  });

  it('suspends a Job by ending its pods gracefully, and makes a pod again when it is resumed', async () => {
    await api('POST', jobs, { ...job('s'), spec: { ...job('s').spec, suspend: true } });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(server.store.list('pods')).toEqual([]);
    expect((await patch(`${jobs}/s`, [{ op: 'replace', path: '/spec/suspend', value: false }])).status).toBe(200);
    expect(server.jobs.pod('default', 's')).toBeDefined();
    await patch(`${jobs}/s`, [{ op: 'replace', path: '/spec/suspend', value: true }]);
    expect(server.jobs.pod('default', 's')!.metadata.deletionTimestamp).toEqual(expect.any(String));
    await new Promise((resolve) => setTimeout(resolve, server.jobs.terminationGraceMs + 50));
    expect(server.store.list('pods')).toEqual([]);
    expect((server.store.get('jobs', 'default', 's')!.status as { conditions: unknown[] }).conditions).toEqual([expect.objectContaining({ type: 'Suspended', status: 'True' })]);
  });

  it('streams watch events from a resourceVersion and answers 410 for a compacted one', async () => {
    const list = await json(api('GET', jobs));
    const controller = new AbortController();
    const response = await fetch(`${server.url}${jobs}?watch=true&resourceVersion=${list.metadata.resourceVersion}`, {
      headers: { authorization: 'Bearer secret' }, signal: controller.signal,
    });
    const reader = response.body!.getReader();
    await api('POST', jobs, job('a'));
    const chunk = new TextDecoder().decode((await reader.read()).value);
    expect(JSON.parse(chunk.split('\n')[0])).toMatchObject({ type: 'ADDED', object: { kind: 'Job', metadata: { name: 'a' } } });
    controller.abort();

    server.store.compact();
    const gone = await (await api('GET', `${jobs}?watch=1&resourceVersion=${list.metadata.resourceVersion}`)).text();
    expect(JSON.parse(gone.trim())).toMatchObject({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired' } });
  });

  it('serves pod logs with tailLines once the container has started', async () => {
    await api('POST', jobs, job('a'));
    const pod = server.jobs.pod('default', 'a')!.metadata.name;
    const waiting = await api('GET', `/api/v1/namespaces/default/pods/${pod}/log`);
    expect(waiting.status).toBe(400);
    server.jobs.run('default', 'a');
    server.jobs.setLogs('default', 'a', '1\n2\n3\n');
    expect(await (await api('GET', `/api/v1/namespaces/default/pods/${pod}/log?tailLines=2`)).text()).toBe('2\n3\n');
    expect(await json(api('GET', '/version'))).toMatchObject({ major: '1' });
  });

  it('refuses by namespace as RBAC does (403), and Pod Security "restricted" refuses a pod that does not comply', async () => {
    server.forbidNamespace('default');
    expect(await json(api('GET', jobs))).toMatchObject({ code: 403, reason: 'Forbidden', message: expect.stringContaining('cannot list resource "jobs" in API group "batch" in the namespace "default"') });
    server = await restart(server, { token: 'secret' });
    server.enforceRestrictedPodSecurity('default');
    await api('POST', jobs, job('plain'));
    const hardened = job('hardened');
    (hardened.spec.template.spec.containers[0] as Record<string, unknown>).securityContext = {
      allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' },
    };
    await api('POST', jobs, hardened);
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(server.jobs.pod('default', 'hardened')).toBeDefined();
    expect(server.store.list('pods', { labelSelector: 'job-name=plain' })).toEqual([]);
    const refused = server.store.list('events', { fieldSelector: 'involvedObject.name=plain,reason=FailedCreate' });
    expect(refused[0].message).toMatch(/^Error creating: pods "plain-\w+" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false/);
  });

  it('compacts routinely: a watch resumed from before the compaction gets 410 Gone', async () => {
    server = await restart(server, { token: 'secret', compactEveryMs: 100 });
    const before = (await json(api('GET', jobs))).metadata.resourceVersion;
    await api('POST', jobs, job('a'));
    await new Promise((resolve) => setTimeout(resolve, 250));
    const gone = await (await api('GET', `${jobs}?watch=1&resourceVersion=${before}`)).text();
    expect(JSON.parse(gone.trim())).toMatchObject({ type: 'ERROR', object: { code: 410, reason: 'Expired' } });
  });
});

async function restart(server: KubeApiServer, options: Parameters<typeof KubeApiServer.start>[0]): Promise<KubeApiServer> {
  await server.close();
  return KubeApiServer.start(options);
}
