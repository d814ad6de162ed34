import { Injectable } from '@nestjs/common';
import { Subject } from 'rxjs';

/**
 * Nudges for the loops that otherwise poll: a task arrived or ended (start the next one),
 * a callback is due (deliver it now rather than at the next tick).
 */
@Injectable()
export class TaskSignals {
  readonly schedule = new Subject<void>();
  readonly deliver = new Subject<void>();
  /** The controller answers again after an outage: callbacks waiting out a backoff may go now. */
  readonly controllerBack = new Subject<void>();

  /**
   * A task ended: its slot is free, and its callback may be due. `outputToStore`: its agent's
   * output is still to be stored here, and the callback waits for that store, which wakes
   * delivery itself (a round now would find nothing due).
   */
  taskFinished(outputToStore = false): void {
    this.schedule.next();
    if (!outputToStore) this.deliver.next();
  }
}
