import { AppConfig } from '../../shared/config/config';
import { TaskWakeups } from './task-wakeups';

describe('TaskWakeups', () => {
  function recorded(): { wakeups: TaskWakeups; rounds: boolean[] } {
    // Not started: no LISTEN connection, so nothing is announced to other replicas.
    const wakeups = new TaskWakeups({ databaseUrl: null, databaseEmbedded: true } as unknown as AppConfig);
    const rounds: boolean[] = [];
    wakeups.pending.subscribe((known) => rounds.push(known));
    return { wakeups, rounds };
  }

  it('asks for a round that claims at once after a store, and one that probes after a recheck', () => {
    const { wakeups, rounds } = recorded();
    wakeups.taskStored();
    wakeups.recheck();
    expect(rounds).toEqual([true, false]);
  });

  it('after a freed slot, claims at once when a task waits, starts no round when none does, and probes when not told', () => {
    const { wakeups, rounds } = recorded();
    wakeups.slotFreed(true);
    wakeups.slotFreed(false);
    wakeups.slotFreed();
    expect(rounds).toEqual([true, false]);
  });
});
