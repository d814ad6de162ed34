import { operator } from '../harness/controller-tasks';
import { openEventStream } from '../harness/events';
import { http } from '../harness/http';
import { RoleProcess } from '../harness/role-process';
import { startControllerReplica, startTestSystem, TestSystem } from '../harness/system';
import { waitFor } from '../harness/wait';

// Replicas B and C run from dist/: `npm run build` first.
jest.setTimeout(120_000);

const CAPS = { STREAMS_PER_PRINCIPAL: '3', STREAM_LEASE_SECONDS: '3' };

/**
 * STREAMS_PER_PRINCIPAL across controller replicas (one process each, one database): a
 * caller's streams on every replica count toward one cap, and the streams of a replica
 * that was killed stop counting once their leases expire.
 */
describe('per-principal stream caps across controller replicas', () => {
  let a: TestSystem;
  const replicas: RoleProcess[] = [];
  const streams: { close(): Promise<void> }[] = [];

  async function replica(): Promise<{ url: string; process: RoleProcess }> {
    const { process, url } = await startControllerReplica(a, CAPS);
    replicas.push(process);
    return { url, process };
  }

  async function open(url: string) {
    const stream = await openEventStream(`${url}/api/v1/events/`, operator(a));
    streams.push(stream);
    return stream;
  }

  const refused = (url: string) => http('GET', `${url}/api/v1/events/`, { headers: operator(a) });

  beforeAll(async () => {
    a = await startTestSystem({ role: 'controller', env: CAPS });
  });
  afterAll(async () => {
    for (const stream of streams) await stream.close();
    for (const process of replicas) await process.stop();
    await a?.close();
  });

  it('refuses a fourth stream on either replica when three are open across both, and frees one when a stream closes', async () => {
    const b = await replica();
    const onA = [await open(a.controllerUrl), await open(a.controllerUrl)];
    const onB = await open(b.url);
    expect([...onA, onB].map((stream) => stream.response.status)).toEqual([200, 200, 200]);

    for (const url of [a.controllerUrl, b.url]) {
      const fourth = await refused(url);
      expect(fourth.status).toBe(429);
      expect(fourth.headers.get('retry-after')).toBe('10');
      expect(fourth.body).toMatchObject({ code: 'throttled', detail: expect.stringContaining('STREAMS_PER_PRINCIPAL') });
    }
    const follow = await http('GET', `${b.url}/api/v1/tasks/6f1c8a52-0c3e-4d7b-9a55-4f0b7f0e2a11/logs/?follow=true`, { headers: operator(a) });
    expect(follow.status).toBe(429);

    await onA[0].close();
    const again = await waitFor(async () => {
      const stream = await openEventStream(`${b.url}/api/v1/events/`, operator(a));
      if (stream.response.status === 200) return stream;
      await stream.close();
      return null;
    }, 5000, 'the slot freed on replica A to be taken on replica B');
    streams.push(again);
    for (const stream of [onA[1], onB, again]) await stream.close();
  });

  it("stops counting a killed replica's streams once their leases expire", async () => {
    const c = await replica();
    const onC = await Promise.all([1, 2, 3].map(() => open(c.url)));
    expect(onC.map((stream) => stream.response.status)).toEqual([200, 200, 200]);
    expect((await refused(a.controllerUrl)).status).toBe(429);

    await c.process.kill();
    const started = Date.now();
    const stream = await waitFor(async () => {
      const attempt = await openEventStream(`${a.controllerUrl}/api/v1/events/`, operator(a));
      if (attempt.response.status === 200) return attempt;
      await attempt.close();
      return null;
    }, 20_000, "replica C's leases to expire", 250);
    streams.push(stream);
    // Not freed at once (nothing closed them), and freed within the lease time and a renewal.
    expect(Date.now() - started).toBeGreaterThan(500);
    expect(Date.now() - started).toBeLessThan(3000 + 2000 + 2000);
    await stream.close();
  });
});
