import { TaskSignals } from './task-signals';

describe('TaskSignals', () => {
  function recorded(): { signals: TaskSignals; rounds: boolean[]; deliveries: number } {
    const signals = new TaskSignals();
    const seen = { signals, rounds: [] as boolean[], deliveries: 0 };
    signals.schedule.subscribe((known) => seen.rounds.push(known));
    signals.deliver.subscribe(() => seen.deliveries++);
    return seen;
  }

  it('asks for a round that claims at once after a store', () => {
    const seen = recorded();
    seen.signals.taskStored();
    expect(seen.rounds).toEqual([true]);
    expect(seen.deliveries).toBe(0);
  });

  it('after an end, asks for a round that looks first, unless the final move told whether a task waits', () => {
    const seen = recorded();
    seen.signals.taskFinished();
    // A pending task waits: the round claims without its look.
    seen.signals.taskFinished(false, true);
    // None does: no round at all.
    seen.signals.taskFinished(false, false);
    expect(seen.rounds).toEqual([false, true]);
    expect(seen.deliveries).toBe(3);
  });

  it('leaves delivery to the output store when the output is still to be stored', () => {
    const seen = recorded();
    seen.signals.taskFinished(true, false);
    expect(seen.rounds).toEqual([]);
    expect(seen.deliveries).toBe(0);
  });
});
