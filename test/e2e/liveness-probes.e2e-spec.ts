import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from 'pg';
import { http } from '../harness/http';
import { testServices } from '../harness/services';
import { startTestSystem, TestSystem } from '../harness/system';
import { waitFor } from '../harness/wait';
import { KubeApiServer } from '../k8s/kube-api-server';

jest.setTimeout(60_000);

/** Refuses new connections to the system's database and ends the open ones: a database outage. */
async function cutDatabase(system: TestSystem, allow: boolean): Promise<void> {
  const name = new URL(system.config.databaseUrl!).pathname.slice(1);
  const admin = new Client({ connectionString: testServices().databaseUrl });
  await admin.connect();
  try {
    await admin.query(`ALTER DATABASE "${name}" WITH ALLOW_CONNECTIONS ${allow}`);
    if (!allow) await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name]);
  } finally {
    await admin.end();
  }
}

describe('/livez: the process only', () => {
  let system: TestSystem;

  beforeAll(async () => {
    system = await startTestSystem({ role: 'all' });
  });
  afterAll(async () => {
    await cutDatabase(system, true).catch(() => undefined);
    await system?.close();
  });

  it('answers 200 on both roles without a credential, and keeps answering while the database is down', async () => {
    for (const base of [system.controllerUrl, system.dispatcherUrl]) {
      const answer = await http('GET', `${base}/livez`);
      expect(answer.status).toBe(200);
      expect(answer.body).toEqual({ status: 'ok' });
    }
    await cutDatabase(system, false);
    await waitFor(async () => (await http('GET', `${system.dispatcherUrl}/health`)).status === 503, 15_000, '/health to see the outage');
    expect((await http('GET', `${system.controllerUrl}/health/`)).status).toBe(503);
    expect((await http('GET', `${system.controllerUrl}/livez`)).status).toBe(200);
    expect((await http('GET', `${system.dispatcherUrl}/livez/`)).status).toBe(200);
  });
});

describe('dispatcher /ready through a Kubernetes API outage', () => {
  let kube: KubeApiServer;
  let system: TestSystem;
  let dir: string;

  beforeAll(async () => {
    kube = await KubeApiServer.start({ token: 'probe-token', namespaces: ['agents'] });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kubeconfig-'));
    fs.writeFileSync(path.join(dir, 'config'), kube.kubeconfig('agents'));
    system = await startTestSystem({
      role: 'dispatcher',
      env: { DISPATCHER_BACKENDS: 'kubernetes', KUBECONFIG: path.join(dir, 'config'), KUBE_NAMESPACE: 'agents', KUBE_API_OUTAGE_GRACE_SECONDS: '3' },
    });
  });
  afterAll(async () => {
    await system?.close();
    await kube?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const ready = () => http('GET', `${system.dispatcherUrl}/ready`);

  it('stays ready within the grace and says so, then goes unready, then recovers', async () => {
    expect((await ready()).body.details.runtime_kubernetes).toEqual({ status: 'up' });
    kube.failNext(100_000, 503);
    const during = await ready();
    expect(during.status).toBe(200);
    expect(during.body.details.runtime_kubernetes).toEqual({ status: 'up', outage: expect.stringMatching(/^unreachable for \d+ s \(.*\); still ready within the 3 s outage grace$/) });

    await waitFor(async () => (await ready()).status === 503, 15_000, 'the grace to run out');
    expect((await ready()).body.error.runtime_kubernetes.status).toBe('down');
    expect((await http('GET', `${system.dispatcherUrl}/livez`)).status).toBe(200);

    kube.recover();
    await waitFor(async () => (await ready()).status === 200, 15_000, 'readiness to come back');
    expect((await ready()).body.details.runtime_kubernetes).toEqual({ status: 'up' });
  });
});
