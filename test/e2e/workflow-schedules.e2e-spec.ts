import { http } from '../harness/http';
import { startTestSystem, TestSystem } from '../harness/system';
import { makeWorkflow } from '../harness/webhooks';
import { waitFor } from '../harness/wait';

jest.setTimeout(60_000);

const schedule = (fields: Record<string, unknown> = {}) => ({ triggers: [{ source: 'schedule', cron: '* * * * * *', ...fields }] });
const tickBrief = { at: '{{schedule.time}}', previous: '{{schedule.previous_time}}', note: 'tick at {{schedule.time}}' };

/** Workflow schedule triggers through the API: their refusals, `next_runs`, and the tasks their ticks make. */
describe('workflow schedules', () => {
  let system: TestSystem;
  let auth: Record<string, string>;
  const url = (path = '') => `${system.controllerUrl}/api/v1/workflows/${path}`;
  const runs = async (id: string) => (await http('GET', url(`${id}/runs/?limit=100`), { headers: auth })).body.results as Record<string, unknown>[];
  const brief = async (guid: string) => (await http('GET', `${system.controllerUrl}/api/v1/tasks/${guid}/brief/`, { headers: auth })).body;

  beforeAll(async () => {
    system = await startTestSystem({ role: 'controller' });
    auth = { authorization: `Token ${system.apiToken}` };
  });
  afterAll(() => system?.close());

  it('stores a schedule trigger with its defaults and shows the next five runs in its time zone', async () => {
    const created = await http('POST', url(), { json: makeWorkflow('nightly', schedule({ cron: '0 3 * * *', timezone: 'Europe/Berlin' })), headers: auth });
    expect(created.status).toBe(201);
    expect(created.body.triggers).toEqual([{ source: 'schedule', cron: '0 3 * * *', timezone: 'Europe/Berlin', catch_up: 'latest' }]);

    const shown = await http('GET', url('nightly/'), { headers: auth });
    const nextRuns = shown.body.next_runs as string[];
    expect(nextRuns).toHaveLength(5);
    const berlin = new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Berlin', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
    expect(nextRuns.map((time) => berlin.format(new Date(time)))).toEqual(Array(5).fill('03:00'));
    expect(new Date(nextRuns[0]).getTime()).toBeGreaterThan(Date.now());
    expect([...nextRuns].sort()).toEqual(nextRuns);
    // A workflow with webhook triggers only has no next_runs.
    await http('POST', url(), { json: makeWorkflow('on-push'), headers: auth });
    expect((await http('GET', url('on-push/'), { headers: auth })).body).not.toHaveProperty('next_runs');
  });

  it.each([
    ['triggers.0.cron', schedule({ cron: '* * *' })],
    ['triggers.0.cron', schedule({ cron: '0 0 31 2 *' })],
    ['triggers.0.cron', schedule({ cron: undefined })],
    ['triggers.0.timezone', schedule({ timezone: 'Europe/Atlantis' })],
    ['triggers.0.catch_up', schedule({ catch_up: 'all' })],
    ['triggers.0.event', schedule({ event: 'push' })],
    ['triggers.0.filter', schedule({ filter: { ref: 'main' } })],
    ['triggers.1.cron', { triggers: [{ source: 'schedule', cron: '@hourly' }, { source: 'forge', event: 'push', cron: '* * * * *' }] }],
  ])('refuses a bad schedule with 400 naming %s', async (field, overrides) => {
    for (const [method, path] of [['POST', url()], ['PUT', url('nightly/')]] as const) {
      const answer = await http(method, path, { json: makeWorkflow('bad-schedule', overrides), headers: auth });
      expect(answer.status).toBe(400);
      expect(answer.body.code).toBe('invalid');
      expect(Object.keys(answer.body.errors)).toEqual([field]);
    }
  });

  it('makes one task per tick, with the template, the workflow and the tick times in its brief; a disabled workflow does not tick', async () => {
    const body = makeWorkflow('every-second', schedule());
    (body.task_template as Record<string, unknown>).brief = tickBrief;
    expect((await http('POST', url(), { json: body, headers: auth })).status).toBe(201);

    const made = await waitFor(async () => ((await runs('every-second')).length >= 3 ? runs('every-second') : null), 15_000, 'three ticks');
    expect(made[0]).toMatchObject({
      status: 'pending', workflow: 'every-second', agent_image: 'agent-examples/echo', timeout_seconds: 120, resources: { cpu: '500m', memory: '256Mi' },
    });
    const briefs = await Promise.all(made.map((task) => brief(task.guid as string)));
    const times = briefs.map((one) => Date.parse(one.at)).sort((a, b) => a - b);
    expect(times.every((time) => time % 1000 === 0)).toBe(true);
    expect(new Set(times).size).toBe(times.length);
    for (const one of briefs.filter((each) => Date.parse(each.at) > times[0])) {
      expect(Date.parse(one.at) - Date.parse(one.previous)).toBe(1000);
      expect(one.note).toBe(`tick at ${one.at}`);
    }

    const disabled = await http('PUT', url('every-second/'), { json: { ...body, enabled: false }, headers: auth });
    expect(disabled.body.next_runs).toEqual([]);
    const count = (await runs('every-second')).length;
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect((await runs('every-second')).length).toBe(count);
  });

  it('gives a template without a brief the tick itself as brief', async () => {
    const body = makeWorkflow('no-brief', schedule({ cron: '*/2 * * * * *', timezone: 'Asia/Tokyo', catch_up: 'none' }));
    delete (body.task_template as Record<string, unknown>).brief;
    expect((await http('POST', url(), { json: body, headers: auth })).status).toBe(201);
    const [task] = await waitFor(() => runs('no-brief').then((found) => (found.length > 0 ? found : null)), 15_000, 'a tick');
    const given = await brief(task.guid as string);
    expect(given).toMatchObject({ source: 'schedule', schedule: { cron: '*/2 * * * * *', timezone: 'Asia/Tokyo' } });
    expect(Date.parse(given.schedule.time) % 2000).toBe(0);
    await http('DELETE', url('no-brief/'), { headers: auth });
  });
});
