import { Injectable } from '@nestjs/common';
import { Subject } from 'rxjs';
import type { TaskEntity } from './task.entity';

/**
 * Nudges for the loops that otherwise poll: a task arrived or ended (start the next one),
 * a callback is due (deliver it now rather than at the next tick).
 */
@Injectable()
export class TaskSignals {
  /** A start round is due: `true` when a task is known to wait (one was stored, or a final move saw one), `false` when one ended (a slot is free). */
  readonly schedule = new Subject<boolean>();
  readonly deliver = new Subject<void>();
  /** The controller answers again after an outage: callbacks waiting out a backoff may go now. */
  readonly controllerBack = new Subject<void>();
  /** Tasks claimed as `starting` by this process outside a start round (with a task's insert): the scheduler starts them. */
  readonly claimed = new Subject<TaskEntity[]>();
  /**
   * Whether this process's scheduler starts what is claimed here: from its boot until its
   * shutdown begins. Outside that, an insert claims nothing and leaves its task `pending`
   * for a start round (here later, or at another replica).
   */
  startsHere = false;

  claimedHere(tasks: TaskEntity[]): void {
    this.claimed.next(tasks);
  }

  /** A task was stored (committed) by this process. */
  taskStored(): void {
    this.schedule.next(true);
  }

  /**
   * A task ended: its slot is free, and its callback may be due. `outputToStore`: its agent's
   * output is still to be stored here, and the callback waits for that store, which wakes
   * delivery itself (a round now would find nothing due). `pendingWaits`, when the final move
   * read it: a pending task waits (the round claims without a look first), or none does (no
   * round: a task stored later wakes one of its own, and the timer's round covers the rest).
   */
  taskFinished(outputToStore = false, pendingWaits?: boolean): void {
    if (pendingWaits !== false) this.schedule.next(pendingWaits === true);
    if (!outputToStore) this.deliver.next();
  }
}
