import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { fieldErrors } from '../../shared/errors/validation';
import { badPlaceholders, fillBrief } from '../workflows/workflow-routing';
import { WorkflowBodyDto } from '../workflows/workflows.dto';
import { nextTicks, ScheduleTrigger, storedScheduleTrigger } from './schedule-trigger';

const template = { agent_image: 'agent-examples/echo', runtime_target: { type: 'local' }, brief: {} };

function problems(...triggers: object[]) {
  const body = plainToInstance(WorkflowBodyDto, { triggers, task_template: template });
  return fieldErrors(validateSync(body, { whitelist: true, forbidUnknownValues: false }));
}

describe('a schedule trigger', () => {
  it.each([
    ['5 fields', { cron: '30 2 * * *' }],
    ['6 fields, seconds first', { cron: '*/10 * * * * *', timezone: 'Europe/Berlin', catch_up: 'none' }],
    ['names and a nickname', { cron: '0 9 * JAN-MAR MON-FRI' }],
    ['@daily', { cron: '@daily', timezone: 'America/New_York' }],
  ])('takes %s', (_, fields) => {
    expect(problems({ source: 'schedule', ...fields })).toEqual({});
  });

  it.each([
    ['triggers.0.cron', { cron: '* * * *' }, /5 fields .* or 6/],
    ['triggers.0.cron', { cron: '* * * * * * *' }, /5 fields .* or 6/],
    ['triggers.0.cron', { cron: '61 * * * *' }, /minute/],
    ['triggers.0.cron', { cron: '0 0 30 2 *' }, /never matches/],
    ['triggers.0.cron', {}, /cron pattern/],
    ['triggers.0.cron', { cron: 7 }, /cron pattern/],
    ['triggers.0.timezone', { cron: '* * * * *', timezone: 'Mars/Olympus_Mons' }, /IANA time zone/],
    ['triggers.0.timezone', { cron: '* * * * *', timezone: '+01:00' }, /IANA time zone/],
    ['triggers.0.catch_up', { cron: '* * * * *', catch_up: 'all' }, /latest, none/],
    ['triggers.0.event', { cron: '* * * * *', event: 'push' }, /takes no event/],
    ['triggers.0.filter', { cron: '* * * * *', filter: { ref: 'main' } }, /takes no filter/],
  ])('is refused naming %s (%j)', (field, fields, message) => {
    const found = problems({ source: 'schedule', ...fields });
    expect(Object.keys(found)).toEqual([field]);
    expect(found[field].join(' ')).toMatch(message);
  });

  it('keeps its schedule fields off webhook triggers, and webhook triggers as they were', () => {
    expect(problems({ source: 'forge', event: 'push' })).toEqual({});
    expect(Object.keys(problems({ source: 'forge' }))).toEqual(['triggers.0.event']);
    const found = problems({ source: 'forge', event: 'push', cron: '* * * * *', catch_up: 'none' });
    expect(Object.keys(found).sort()).toEqual(['triggers.0.catch_up', 'triggers.0.cron']);
    expect(found['triggers.0.cron']).toEqual(['cron is only for a trigger with source "schedule"']);
  });

  it('is stored with its defaults: UTC, catch_up latest', () => {
    expect(storedScheduleTrigger({ cron: ' 0 3 * * * ' })).toEqual({ source: 'schedule', cron: '0 3 * * *', timezone: 'UTC', catch_up: 'latest' });
  });
});

describe('brief placeholders of a schedule tick', () => {
  it('accepts {{schedule.time}} and {{schedule.previous_time}} and fills them', () => {
    const brief = { at: '{{schedule.time}}', window: 'since {{ schedule.previous_time }}', event: '{{payload.ref}}' };
    expect(badPlaceholders({ ...brief, bad: '{{schedule.cron}}' })).toEqual(['{{schedule.cron}}']);
    expect(fillBrief(brief, null, { time: '2026-03-08T07:00:00.000Z', previous_time: null })).toEqual({
      at: '2026-03-08T07:00:00.000Z', window: 'since ', event: null,
    });
    expect(fillBrief(brief, { ref: 'main' })).toEqual({ at: null, window: 'since ', event: 'main' });
  });
});

const at = (cron: string, timezone: string): ScheduleTrigger => ({ source: 'schedule', cron, timezone, catch_up: 'latest' });
const iso = (times: Date[]) => times.map((time) => time.toISOString());

describe('next tick times across daylight-saving changes', () => {
  // America/New_York: 2026-03-08 02:00 EST becomes 03:00 EDT; 2026-11-01 02:00 EDT becomes 01:00 EST.
  it('spring forward: a fixed time inside the gap runs once, at the first time after it', () => {
    expect(iso(nextTicks([at('30 2 * * *', 'America/New_York')], new Date('2026-03-07T12:00:00Z'), 3))).toEqual([
      '2026-03-08T07:00:00.000Z', '2026-03-09T06:30:00.000Z', '2026-03-10T06:30:00.000Z',
    ]);
  });

  it('spring forward: an interval skips the times that do not exist', () => {
    expect(iso(nextTicks([at('*/30 * * * *', 'America/New_York')], new Date('2026-03-08T06:00:00Z'), 3))).toEqual([
      '2026-03-08T06:30:00.000Z', '2026-03-08T07:00:00.000Z', '2026-03-08T07:30:00.000Z',
    ]);
  });

  it('fall back: a fixed time inside the repeated hour runs once, at its first occurrence', () => {
    expect(iso(nextTicks([at('30 1 * * *', 'America/New_York')], new Date('2026-10-31T12:00:00Z'), 2))).toEqual([
      '2026-11-01T05:30:00.000Z', '2026-11-02T06:30:00.000Z',
    ]);
  });

  it('fall back: an interval runs in both occurrences of the repeated hour', () => {
    expect(iso(nextTicks([at('0,30 * * * *', 'America/New_York')], new Date('2026-11-01T04:45:00Z'), 5))).toEqual([
      '2026-11-01T05:00:00.000Z', '2026-11-01T05:30:00.000Z', '2026-11-01T06:00:00.000Z', '2026-11-01T06:30:00.000Z', '2026-11-01T07:00:00.000Z',
    ]);
  });

  it('Europe/Berlin keeps 03:00 local on both sides of the spring change', () => {
    expect(iso(nextTicks([at('0 3 * * *', 'Europe/Berlin')], new Date('2026-03-28T12:00:00Z'), 2))).toEqual([
      '2026-03-29T01:00:00.000Z', '2026-03-30T01:00:00.000Z',
    ]);
  });

  it('merges several triggers, each time once', () => {
    const triggers = [at('*/20 * * * * *', 'UTC'), at('*/30 * * * * *', 'UTC')];
    expect(iso(nextTicks(triggers, new Date('2026-01-01T00:00:00Z'), 4))).toEqual([
      '2026-01-01T00:00:20.000Z', '2026-01-01T00:00:30.000Z', '2026-01-01T00:00:40.000Z', '2026-01-01T00:01:00.000Z',
    ]);
  });
});
