import { dueTicks, MAX_TICKS_PER_ROUND, ON_TIME_WINDOW_MS } from './schedule-plan';
import { CatchUp, ScheduleTrigger } from './schedule-trigger';

const everySecond = (catchUp: CatchUp = 'latest'): ScheduleTrigger => ({ source: 'schedule', cron: '* * * * * *', timezone: 'UTC', catch_up: catchUp });
const hourly = (catchUp: CatchUp = 'latest'): ScheduleTrigger => ({ source: 'schedule', cron: '0 * * * *', timezone: 'UTC', catch_up: catchUp });
const t = (text: string) => new Date(`2026-06-01T${text}Z`);
const times = (ticks: { time: Date }[]) => ticks.map((tick) => tick.time.toISOString().slice(11, 19));

describe('the ticks a schedule owes', () => {
  it('owes nothing before its first tick after the workflow was created', () => {
    expect(dueTicks([hourly()], { since: t('10:20:00'), lastTick: null }, t('10:59:59'), t('09:00:00'))).toEqual([]);
    const due = dueTicks([hourly()], { since: t('10:20:00'), lastTick: null }, t('11:00:00.200'), t('09:00:00'));
    expect(times(due)).toEqual(['11:00:00']);
    // The first tick's previous time is the tick its cron had before it.
    expect(due[0].previousTime).toEqual(t('10:00:00'));
  });

  it('owes every on-time tick after the last one made, each with the one before as previous', () => {
    const due = dueTicks([everySecond()], { since: t('10:00:00'), lastTick: t('10:00:05') }, t('10:00:08.400'), t('09:00:00'));
    expect(times(due)).toEqual(['10:00:06', '10:00:07', '10:00:08']);
    expect(due.map((tick) => tick.previousTime?.toISOString().slice(11, 19))).toEqual(['10:00:05', '10:00:06', '10:00:07']);
  });

  it('latest: after downtime, owes the most recent missed tick once, then the on-time ones', () => {
    // Down from 10:00:05 to 10:05:00.500: a replica whose ticker started then.
    const due = dueTicks([everySecond('latest')], { since: t('09:00:00'), lastTick: t('10:00:05') }, t('10:05:01.100'), t('10:05:00.500'));
    expect(times(due)).toEqual(['10:05:00', '10:05:01']);
    expect(due[0].previousTime).toEqual(t('10:00:05'));
  });

  it('none: after downtime, skips every missed tick', () => {
    const due = dueTicks([everySecond('none')], { since: t('09:00:00'), lastTick: t('10:00:05') }, t('10:05:01.100'), t('10:05:00.500'));
    expect(times(due)).toEqual(['10:05:01']);
  });

  it('latest on an hourly schedule: a night of downtime makes one task, for the last hour missed', () => {
    const due = dueTicks([hourly('latest')], { since: t('00:00:00'), lastTick: t('01:00:00') }, t('07:30:00'), t('07:29:58'));
    expect(times(due)).toEqual(['07:00:00']);
    expect(dueTicks([hourly('none')], { since: t('00:00:00'), lastTick: t('01:00:00') }, t('07:30:00'), t('07:29:58'))).toEqual([]);
  });

  it(`counts a running replica's late round as on time for ${ON_TIME_WINDOW_MS / 1000} s, then as missed`, () => {
    const late = dueTicks([everySecond('none')], { since: t('09:00:00'), lastTick: t('10:00:05') }, t('10:00:09.900'), t('09:00:00'));
    expect(times(late)).toEqual(['10:00:06', '10:00:07', '10:00:08', '10:00:09']);
    const tooLate = dueTicks([everySecond('none')], { since: t('09:00:00'), lastTick: t('10:00:05') }, t('10:01:05'), t('09:00:00'));
    expect(tooLate).toHaveLength(ON_TIME_WINDOW_MS / 1000 + 1);
    expect(times(tooLate)[0]).toBe('10:00:50');
  });

  it('starts again from a change of the workflow: ticks before it are not owed', () => {
    const due = dueTicks([everySecond('latest')], { since: t('10:00:30.250'), lastTick: t('10:00:05') }, t('10:00:31.500'), t('09:00:00'));
    expect(times(due)).toEqual(['10:00:31']);
  });

  it('owes a time shared by two triggers once, and at most a round-sized batch', () => {
    const due = dueTicks([everySecond(), { ...everySecond(), cron: '*/2 * * * * *' }], { since: t('10:00:00'), lastTick: t('10:00:00') }, t('10:00:04'), t('09:00:00'));
    expect(times(due)).toEqual(['10:00:01', '10:00:02', '10:00:03', '10:00:04']);
    const year = dueTicks([everySecond()], { since: t('00:00:00'), lastTick: null }, t('12:00:00'), t('00:00:00'));
    expect(year.length).toBeLessThanOrEqual(MAX_TICKS_PER_ROUND);
  });
});
