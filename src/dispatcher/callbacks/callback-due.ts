/** The dispatcher's callback outbox. */
export const OUTBOX = '"dispatcher"."callback_outbox"';

/**
 * A callback waits for its task's output to be stored (`logs_stored_at`) at most this
 * long: the replica that ran a host-local agent may have stopped before storing it.
 */
export const LOGS_WAIT_SECONDS = 30;

/**
 * An outbox row (alias `due`) is due: pending, its next attempt's time come, and its task's
 * output stored, or never to be (the agent never ran), or waited for LOGS_WAIT_SECONDS. One
 * text for the delivery round's claim and the scheduler tick's look (`TasksRepository.tickProbe`).
 */
export const CALLBACK_DUE = `due.state = 'pending' AND due.next_attempt_at <= now()
  AND (due.created_at < now() - make_interval(secs => ${LOGS_WAIT_SECONDS}) OR EXISTS (
    SELECT 1 FROM "dispatcher"."tasks" w WHERE w.task_id = due.task_id AND (w.logs_stored_at IS NOT NULL OR w.runtime_ref IS NULL)))`;
