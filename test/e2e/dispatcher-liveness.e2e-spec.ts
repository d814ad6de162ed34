import { checkInDispatcher, createTask, getTask, operator } from '../harness/controller-tasks';
import { http } from '../harness/http';
import { RecordingDispatcher } from '../harness/recording-dispatcher';
import { waitFor } from '../harness/wait';
import { startTestSystem, TestSystem } from '../harness/system';

describe('a dispatcher that stops heartbeating', () => {
  let system: TestSystem;
  let silent: RecordingDispatcher;

  const stateOf = async (slug: string) =>
    (await http('GET', `${system.controllerUrl}/api/v1/dispatchers/${slug}/`, { headers: operator(system) })).body.state as string;

  beforeAll(async () => {
    system = await startTestSystem({ role: 'controller', env: { TASK_DISPATCH_RETRY_SECONDS: '1' } });
    silent = await new RecordingDispatcher().start();
  });
  afterAll(async () => {
    await silent?.stop();
    await system?.close();
  });

  it('goes stale, then offline, and gets no new tasks meanwhile', async () => {
    const checkin = await checkInDispatcher(system, { name: 'quiet', endpoint_url: silent.url, heartbeat_interval_seconds: 1 });
    const guid = checkin.body.dispatcher_guid;
    expect(await stateOf('quiet')).toBe('online');

    // Heartbeats keep it online past two intervals.
    for (let i = 0; i < 3; i++) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const beat = await http('POST', `${system.controllerUrl}/api/v1/dispatchers/heartbeat/`, {
        headers: operator(system), json: { dispatcher_guid: guid, active_tasks: 0, capacity: 4 },
      });
      expect(beat.status).toBe(200);
    }
    expect(await stateOf('quiet')).toBe('online');

    await waitFor(async () => ((await stateOf('quiet')) === 'stale' ? true : undefined), 5_000, 'stale');
    const whileStale = await createTask(system);
    expect(whileStale.body.status).toBe('pending');

    await waitFor(async () => ((await stateOf('quiet')) === 'offline' ? true : undefined), 8_000, 'offline');
    const whileOffline = await createTask(system);
    expect(whileOffline.body.status).toBe('pending');
    // The retry loop ran meanwhile and still sent nothing.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(silent.taskRequests).toHaveLength(0);
    expect((await getTask(system, whileStale.body.guid)).body.status).toBe('pending');

    // Heard from again, it is online and the waiting tasks go to it.
    await http('POST', `${system.controllerUrl}/api/v1/dispatchers/heartbeat/`, {
      headers: operator(system), json: { dispatcher_guid: guid, active_tasks: 0, capacity: 4 },
    });
    expect(await stateOf('quiet')).toBe('online');
    await waitFor(() => (silent.taskRequests.length === 2 ? true : undefined), 5_000, 'the waiting tasks');
  }, 30_000);
});
