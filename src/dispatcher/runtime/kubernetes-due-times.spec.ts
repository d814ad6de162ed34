import { DueTimes } from './kubernetes-due-times';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('DueTimes', () => {
  it('runs each key once at its time, earliest first, whatever order they were set in', async () => {
    const ran: string[] = [];
    const due = new DueTimes((key) => ran.push(key));
    due.set('late', 120);
    due.set('early', 30);
    due.set('middle', 70);
    await sleep(200);
    expect(ran).toEqual(['early', 'middle', 'late']);
    expect(due.size).toBe(0);
  });

  it('never runs a deleted key, and a key set again runs at its new time only', async () => {
    // Judged by when each key ran, not by what ran by a wall-clock sleep: a loaded machine may
    // wake the test late, but a key must never run before the time it was last set to.
    const ran: { key: string; at: number }[] = [];
    const due = new DueTimes((key) => ran.push({ key, at: Date.now() }));
    const start = Date.now();
    due.set('gone', 20);
    due.set('moved', 20);
    due.delete('gone');
    due.set('moved', 100);
    await sleep(300);
    expect(ran.map((run) => run.key)).toEqual(['moved']);
    expect(ran[0].at - start).toBeGreaterThanOrEqual(100);
  });

  it('holds ten thousand deadlines with one timer', async () => {
    const ran = new Set<string>();
    const due = new DueTimes((key) => ran.add(key));
    const handlesBefore = process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
    for (let i = 0; i < 10_000; i += 1) due.set(`task-${i}`, 50 + (i % 50));
    expect(process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length - handlesBefore).toBeLessThanOrEqual(1);
    await sleep(250);
    expect(ran.size).toBe(10_000);
  });

  it('runs nothing after close', async () => {
    const ran: string[] = [];
    const due = new DueTimes((key) => ran.push(key));
    due.set('a', 10);
    due.close();
    await sleep(40);
    expect(ran).toEqual([]);
  });
});
