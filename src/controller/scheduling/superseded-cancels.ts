import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { TaskDispatchService } from '../tasks/task-dispatch.service';
import { TasksRepository } from '../tasks/tasks.repository';

const TASKS = '"controller"."tasks"';
/** Cancels sent per dispatch round. */
const PER_ROUND = 50;

/**
 * Sends the cancels `cancel_in_progress` decided (issue 21, item 2): each dispatch round, the
 * open tasks marked superseded and not yet asked to stop are asked, through their dispatcher,
 * as POST /tasks/{guid}/cancel/ does; the dispatcher's callback then ends them `cancelled`.
 * A dispatcher that could not be reached is asked again next round.
 */
@Injectable()
export class SupersededCancels {
  private readonly logger = new Logger(SupersededCancels.name);

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly tasks: TasksRepository,
    private readonly dispatch: TaskDispatchService,
  ) {}

  async sendDue(): Promise<void> {
    const due: { guid: string; superseded_by: string }[] = await this.db.query(
      `SELECT guid, superseded_by FROM ${TASKS}
       WHERE superseded_by IS NOT NULL AND status IN ('dispatched', 'running') AND cancel_requested_at IS NULL
       LIMIT ${PER_ROUND}`,
    );
    for (const row of due) await this.cancel(row.guid, row.superseded_by);
  }

  private async cancel(guid: string, newer: string): Promise<void> {
    const marked = await this.tasks.markCancelRequested(guid);
    if (!marked) return;
    const answer = await this.dispatch.requestCancel(marked).catch(() => undefined);
    if (answer === null || (answer && answer.kind !== 'accepted' && answer.status === 404)) {
      await this.tasks.transition(guid, 'cancelled', { errorMessage: `replaced by the newer task ${newer} (cancel_in_progress); the dispatcher no longer knew it` });
      return;
    }
    if (answer && (answer.kind === 'accepted' || answer.status === 409)) return;
    this.logger.warn({ task: guid, dispatcher: marked.dispatcherSlug }, 'The cancel of a superseded task did not reach its dispatcher; it is sent again next round');
    await this.db.query(`UPDATE ${TASKS} SET cancel_requested_at = NULL WHERE guid = $1 AND status IN ('dispatched', 'running')`, [guid]);
  }
}
