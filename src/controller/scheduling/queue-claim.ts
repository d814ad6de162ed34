import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Trips, tripTransaction } from '../../shared/database/round-trips';
import { hydrate, runPrepared, selectedColumns } from '../../shared/database/statements';
import { dispatcherState } from '../dispatchers/dispatcher-state';
import { Dispatcher } from '../dispatchers/dispatchers.entity';
import { Task } from '../tasks/tasks.entity';
import { ClaimCandidate, ClaimSlots } from './claim-plan';

const TASKS = '"controller"."tasks"';

/** Serialises claims across every controller replica (any fixed number all replicas agree on). */
/** Whether a pending task is due and unclaimed: the probe's question, also asked by a completion that frees a slot. */
export const CLAIMABLE_PENDING = `EXISTS (SELECT 1 FROM ${TASKS}
                 WHERE status = 'pending'
                   AND (next_dispatch_at IS NULL OR next_dispatch_at <= now())
                   AND (dispatch_claimed_until IS NULL OR dispatch_claimed_until < now()))`;

export const QUEUE_CLAIM_LOCK = 0x5ced0121;

/** Rows one pass reads per task it may take: room to pass over tasks that must wait. */
const WINDOW_FACTOR = 2;
const MAX_PASSES = 4;
/**
 * The fewest rows the opening reads. Its page is sized by the slots free when the claim
 * begins (WINDOW_FACTOR rows a free slot, at most a full window): in a busy queue most claims
 * have a slot or none to fill, and a full window re-read 128 waiting tasks each time to tell
 * them the reason they already had. Later passes read full windows, so a claim still looks as
 * deep for a task a free slot fits; tasks past the first page are told why they wait as the
 * queue moves them up.
 */
const MIN_OPENING_WINDOW = 32;

/** A task holds a slot of its dispatcher and of its key while dispatched or running, or while a round has it claimed. */
const HOLDS_SLOT = `(status IN ('dispatched', 'running') OR (status = 'pending' AND dispatch_claimed_until > now()))`;

/**
 * Pending tasks that are due and unclaimed, in queue order: at most `limit`, none of the keys in
 * $2 (known to be full), after the row ($3 priority, $4 fair tag, $5 creation, $6 guid) when given.
 */
const candidatesUpTo = (limit: string) => `SELECT guid, dispatcher_task_id, runtime_target->>'type' AS runtime_type, dispatcher_labels, requested_dispatcher, concurrency_key, concurrency_limit,
         priority, fair_tag, created_at, created_at::text AS created_at_text, last_dispatch_error
  FROM ${TASKS}
  WHERE status = 'pending'
    AND (next_dispatch_at IS NULL OR next_dispatch_at <= now())
    AND (dispatch_claimed_until IS NULL OR dispatch_claimed_until < now())
    AND (concurrency_key IS NULL OR concurrency_key <> ALL($2::text[]))
    AND ($3::int IS NULL OR priority < $3 OR (priority = $3 AND (fair_tag, created_at, guid) > ($4::float8, $5::timestamptz, $6::uuid)))
  ORDER BY priority DESC, fair_tag, created_at, guid
  LIMIT ${limit}`;
const CANDIDATES = candidatesUpTo('$1');

/**
 * The fields of a candidate row, in the order the opening sends each candidate as a JSON array:
 * a window of 128 candidates sent as objects repeated every field's name in every row, over
 * half of the opening's text in a long queue (docs/performance.md, twenty-seventh pass).
 */
const CANDIDATE_FIELDS = ['guid', 'dispatcher_task_id', 'runtime_type', 'dispatcher_labels', 'requested_dispatcher', 'concurrency_key', 'concurrency_limit',
  'priority', 'fair_tag', 'created_at_text', 'last_dispatch_error'] as const satisfies readonly (keyof CandidateRow)[];

/** Every field of CandidateRow is one of CANDIDATE_FIELDS (a compile error names the one left out). */
const EVERY_FIELD_SENT: Record<Exclude<keyof CandidateRow, (typeof CANDIDATE_FIELDS)[number]>, never> = {};
void EVERY_FIELD_SENT;

/** A candidate the opening sent as an array of CANDIDATE_FIELDS. */
function candidateRowOf(values: unknown[]): CandidateRow {
  const row: Record<string, unknown> = {};
  for (let i = 0; i < CANDIDATE_FIELDS.length; i++) row[CANDIDATE_FIELDS[i]] = values[i];
  return row as unknown as CandidateRow;
}

interface CandidateRow {
  guid: string;
  dispatcher_task_id: string | null;
  runtime_type: string;
  dispatcher_labels: Record<string, string>;
  requested_dispatcher: string | null;
  concurrency_key: string | null;
  concurrency_limit: number | null;
  priority: number;
  fair_tag: number;
  /** As text: a Date would drop the microseconds the keyset needs. */
  created_at_text: string;
  /** Why it waits, as the last claim or offer told it. */
  last_dispatch_error: string | null;
}

/**
 * The controller's one queue (issue 21, items 0 to 3): a claim takes the pending tasks that
 * may start now, in the order priority, fair share, age (the `tasks_claim_order_idx` walk),
 * passing over a task whose concurrency key is at its limit or whose fitting dispatchers
 * have no free slot, and tells those why they wait.
 *
 * One transaction per claim, under one transaction-scoped advisory lock: replicas claim one
 * after another, each counting what the others hold (dispatched, running, or claimed and on
 * its way), so neither a key's limit nor a dispatcher's capacity is ever exceeded. A claim
 * is a few index walks, so the wait is short; sending to dispatchers happens after it.
 */
/** What a dispatch round has to do, read in one statement before it does any of it. */
export interface RoundProbe {
  /** A dispatcher heard within two of its heartbeat intervals of `now` (dispatcher-state.ts's `online`). */
  online: boolean;
  /** A pending task is due and unclaimed: a claim may find work. */
  claimable: boolean;
  /** A superseded open task has not been asked to stop yet (superseded-cancels.ts). */
  superseded: boolean;
}

/**
 * A claim's tasks, with the dispatchers and the slots each held (dispatched, running, or
 * claimed by another round) as the claim read them under its lock: sending the batch picks
 * from these instead of reading both again a moment later.
 */
export interface ClaimedBatch {
  tasks: Task[];
  dispatchers: Dispatcher[];
  held: Map<string, number>;
  /** The tasks the claim armed for the dispatcher it chose (`ArmCallback`): their offer to it needs no statement of its own. */
  armed: Set<string>;
}

/**
 * The hash of the callback token for a task's attempt (its dispatcher task id) on a
 * dispatcher: given to a claim, it records the dispatcher it chose for each task the way an
 * offer does (token hash, slug, one more dispatch attempt), in the statement that claims it.
 */
export type ArmCallback = (dispatcherTaskId: string, dispatcherGuid: string) => string;

/** A superseded open task has not been asked to stop yet (superseded-cancels.ts). */
const SUPERSEDED_OPEN = `EXISTS (SELECT 1 FROM ${TASKS}
                 WHERE superseded_by IS NOT NULL AND status IN ('dispatched', 'running') AND cancel_requested_at IS NULL)`;

@Injectable()
export class QueueClaim {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * One read, no lock: most rounds (woken by a batch that ended, a callback, another
   * replica) find nothing to claim, and a claim's transaction, advisory lock and five
   * statements are then spared. A task stored after this read wakes a round of its own.
   */
  async probe(now: Date): Promise<RoundProbe> {
    const [row] = await runPrepared<RoundProbe>(
      this.db,
      `SELECT
         EXISTS (SELECT 1 FROM "controller"."dispatchers"
                 WHERE last_heartbeat_at >= $1::timestamptz - make_interval(secs => 2 * heartbeat_interval_seconds)) AS online,
         ${CLAIMABLE_PENDING} AS claimable,
         ${SUPERSEDED_OPEN} AS superseded`,
      [now.toISOString()],
    );
    return row;
  }

  async claim(size: number, leaseSeconds: number): Promise<Task[]> {
    return (await this.claimBatch(size, leaseSeconds)).tasks;
  }

  async claimBatch(size: number, leaseSeconds: number, arm?: ArmCallback): Promise<ClaimedBatch> {
    return (await this.claimOpened(size, leaseSeconds, null, arm)).batch;
  }

  /**
   * The claim of a round woken by a task this process stored: there is one to claim, so the
   * probe's read would be a round trip before the claim for nothing. What else a round asks
   * the probe (a dispatcher online at `now`, a superseded task to stop) is read by the claim's
   * opening; with no dispatcher online it takes nothing, as a round that probed would not claim.
   */
  async claimProbing(size: number, leaseSeconds: number, now: Date, arm?: ArmCallback): Promise<{ probe: Omit<RoundProbe, 'claimable'>; batch: ClaimedBatch }> {
    const { probe, batch } = await this.claimOpened(size, leaseSeconds, now, arm);
    return { probe: probe!, batch };
  }

  private claimOpened(size: number, leaseSeconds: number, probeAt: Date | null, arm?: ArmCallback): Promise<{ probe: Omit<RoundProbe, 'claimable'> | null; batch: ClaimedBatch }> {
    // Round trips: the transaction, its lock and the opening read; a page or keys read when a
    // pass needs them; the reasons, the claim and COMMIT.
    return tripTransaction(this.db, { lock: QUEUE_CLAIM_LOCK }, async (trips) => {
      const window = size * WINDOW_FACTOR;
      const { dispatchers, held, candidates, opened, superseded } = await this.opening(trips, window, probeAt !== null);
      const probe = probeAt ? { online: dispatchers.some((dispatcher) => dispatcherState(dispatcher.lastHeartbeatAt, dispatcher.heartbeatIntervalSeconds, probeAt) === 'online'), superseded } : null;
      if (probe && !probe.online) return { probe, batch: { tasks: [], dispatchers, held, armed: new Set<string>() } };
      // The plan counts its own choices into the map it is given: the batch's sender counts them as it sends.
      const slots = new ClaimSlots(dispatchers, new Map(held), new Map());
      let after: CandidateRow | null = null;
      const seen = new Map<string, CandidateRow>();
      for (let pass = 0; pass < MAX_PASSES; pass++) {
        const rows: CandidateRow[] = pass === 0 ? candidates : await this.candidates(trips, window, [...slots.plan.fullKeys], after);
        for (const row of rows) seen.set(row.guid, row);
        await this.readKeys(trips, rows, slots);
        const more = slots.take(rows.map(candidateOf), size);
        if (!more || rows.length < (pass === 0 ? opened : window)) break;
        after = rows[rows.length - 1];
      }
      const arming = arm ? armings(slots.plan.chosen, seen, dispatchers, arm) : new Map<string, Arming>();
      const tasks = await this.noteAndTake(trips, newReasons(slots.plan.waiting, seen), slots.plan.chosen, leaseSeconds, arming);
      return { probe, batch: { tasks, dispatchers, held, armed: new Set(tasks.filter((task) => arming.has(task.guid)).map((task) => task.guid)) } };
    });
  }

  /**
   * What every claim reads first, in one statement under the lock (so in one snapshot taken
   * after it): every dispatcher, the slots each holds cluster-wide, and the first page of
   * candidates, `opened` rows at most: WINDOW_FACTOR a slot free on any dispatcher, at least
   * MIN_OPENING_WINDOW, at most `limit` (and `limit` when a dispatcher reports no capacity or
   * none is registered: every task may then be taken). Three round trips were one each; each
   * is a write to PostgreSQL and a wait.
   */
  private async opening(trips: Trips, limit: number, probing: boolean): Promise<{ dispatchers: Dispatcher[]; held: Map<string, number>; candidates: CandidateRow[]; opened: number; superseded: boolean }> {
    const metadata = this.db.getMetadata(Dispatcher);
    const [[row]] = (await trips.send([{
      text: `WITH held AS (
           SELECT dispatcher_guid, count(*)::int AS held FROM ${TASKS}
           WHERE dispatcher_guid IS NOT NULL AND ${HOLDS_SLOT} GROUP BY dispatcher_guid),
         opened AS (
           SELECT CASE WHEN count(*) = 0 OR bool_or(d.capacity IS NULL OR d.capacity <= 0) THEN $1::int
                       ELSE least($1::int, greatest($7::int, $8::int * sum(greatest(d.capacity - coalesce(h.held, 0), 0))::int)) END AS size
           FROM "controller"."dispatchers" d LEFT JOIN held h ON h.dispatcher_guid = d.guid)
       SELECT ${probing ? SUPERSEDED_OPEN : 'false'} AS superseded,
         (SELECT coalesce(json_agg(d), '[]'::json) FROM (SELECT ${selectedColumns(metadata)} FROM "controller"."dispatchers") d) AS dispatchers,
         (SELECT coalesce(json_agg(h), '[]'::json) FROM held h) AS held,
         (SELECT size FROM opened) AS opened,
         (SELECT coalesce(json_agg(json_build_array(${CANDIDATE_FIELDS.map((field) => `c.${field}`).join(', ')})
                    ORDER BY c.priority DESC, c.fair_tag, c.created_at, c.guid), '[]'::json)
            FROM (${candidatesUpTo('(SELECT size FROM opened)')}) c) AS candidates`,
      values: [limit, [], null, null, null, null, Math.min(MIN_OPENING_WINDOW, limit), WINDOW_FACTOR],
    }])) as unknown as { superseded: boolean; dispatchers: Record<string, unknown>[]; held: { dispatcher_guid: string; held: number }[]; opened: number; candidates: unknown[][] }[][];
    return {
      dispatchers: row.dispatchers.map((dispatcher) => hydrate<Dispatcher>(this.db, metadata, dispatcher)),
      held: new Map(row.held.map((entry) => [entry.dispatcher_guid, Number(entry.held)])),
      candidates: row.candidates.map(candidateRowOf),
      opened: row.opened,
      superseded: row.superseded,
    };
  }

  /** Pending tasks that are due and unclaimed, in queue order, after `after`, leaving out keys known to be full. */
  private async candidates(trips: Trips, limit: number, fullKeys: string[], after: CandidateRow | null): Promise<CandidateRow[]> {
    const [rows] = await trips.send([{
      text: CANDIDATES,
      values: [limit, fullKeys, after?.priority ?? null, after?.fair_tag ?? null, after?.created_at_text ?? null, after?.guid ?? null],
    }]);
    return rows as unknown as CandidateRow[];
  }

  /** Adds the slots held of each concurrency key among `rows` not read yet. */
  private async readKeys(trips: Trips, rows: CandidateRow[], slots: ClaimSlots): Promise<void> {
    const keys = [...new Set(rows.map((row) => row.concurrency_key).filter((key): key is string => key !== null))].filter((key) => !slots.knowsKey(key));
    if (keys.length === 0) return;
    const [held] = (await trips.send([{
      text: `SELECT concurrency_key, count(*)::int AS held FROM ${TASKS}
             WHERE concurrency_key = ANY($1::text[]) AND ${HOLDS_SLOT} GROUP BY concurrency_key`,
      values: [keys],
    }])) as unknown as { concurrency_key: string; held: number }[][];
    const counts = new Map(held.map((row) => [row.concurrency_key, Number(row.held)]));
    for (const key of keys) slots.learnKey(key, counts.get(key) ?? 0);
  }

  /**
   * Tells the tasks passed over why they wait (`waiting`: only reasons they were not given yet),
   * claims the chosen tasks for `leaseSeconds`, each holding the slot of the dispatcher chosen
   * for it, and moves each priority's virtual time to the largest turn this claim took
   * (QueueClock); sent with COMMIT, one round trip.
   */
  private async noteAndTake(trips: Trips, waiting: Map<string, string>, chosen: Map<string, string | null>, leaseSeconds: number, arming: Map<string, Arming>): Promise<Task[]> {
    const note = {
      text: `UPDATE ${TASKS} t SET last_dispatch_error = v.reason, updated_at = now()
             FROM unnest($1::uuid[], $2::text[]) AS v(guid, reason)
             WHERE t.guid = v.guid AND t.status = 'pending' AND t.last_dispatch_error IS DISTINCT FROM v.reason`,
      values: [[...waiting.keys()], [...waiting.values()]],
    };
    // A task armed for its chosen dispatcher is recorded as an offer to it would record it (TasksRepository.assign).
    const armed = [...chosen.keys()].map((guid) => arming.get(guid));
    const take = {
      text: `WITH taken AS (
         UPDATE ${TASKS} t SET dispatch_claimed_until = now() + make_interval(secs => $3), dispatcher_guid = v.dispatcher_guid,
           callback_token_hash = coalesce(v.hash, t.callback_token_hash), dispatcher_slug = coalesce(v.slug, t.dispatcher_slug),
           dispatch_attempts = t.dispatch_attempts + (v.hash IS NOT NULL)::int,
           updated_at = CASE WHEN v.hash IS NULL THEN t.updated_at ELSE now() END
         FROM unnest($1::uuid[], $2::uuid[], $4::text[], $5::text[]) AS v(guid, dispatcher_guid, hash, slug)
         WHERE t.guid = v.guid AND t.status = 'pending'
         RETURNING t.*),
       clock AS (
         INSERT INTO "controller"."queue_clock" (priority, now_tag) SELECT priority, max(fair_tag) FROM taken GROUP BY priority
         ON CONFLICT (priority) DO UPDATE SET now_tag = GREATEST(queue_clock.now_tag, EXCLUDED.now_tag))
       SELECT * FROM taken`,
      values: [[...chosen.keys()], [...chosen.values()], leaseSeconds, armed.map((entry) => entry?.hash ?? null), armed.map((entry) => entry?.slug ?? null)],
    };
    const statements = [...(waiting.size > 0 ? [note] : []), ...(chosen.size > 0 ? [take] : [])];
    if (statements.length === 0) return [];
    const answers = await trips.send(statements, { commit: true });
    if (chosen.size === 0) return [];
    const rows = answers[answers.length - 1];
    const order = [...chosen.keys()];
    const metadata = this.db.getMetadata(Task);
    return rows.map((row) => hydrate<Task>(this.db, metadata, row)).sort((a, b) => order.indexOf(a.guid) - order.indexOf(b.guid));
  }
}

interface Arming {
  hash: string;
  slug: string;
}

/** The callback token hash and dispatcher slug of each chosen task that has a dispatcher. */
function armings(chosen: Map<string, string | null>, rows: Map<string, CandidateRow>, dispatchers: Dispatcher[], arm: ArmCallback): Map<string, Arming> {
  const slugs = new Map(dispatchers.map((dispatcher) => [dispatcher.guid, dispatcher.slug]));
  const arming = new Map<string, Arming>();
  for (const [guid, dispatcherGuid] of chosen) {
    const slug = dispatcherGuid === null ? undefined : slugs.get(dispatcherGuid);
    const row = rows.get(guid);
    if (slug === undefined || !row) continue;
    arming.set(guid, { hash: arm(row.dispatcher_task_id ?? row.guid, dispatcherGuid!), slug });
  }
  return arming;
}

/**
 * The reasons of `waiting` its tasks were not given yet, as the claim read them. In a long queue
 * a claim passes over the same tasks for the same reason round after round: sending all of them
 * again made the claim's largest statement, for rows the update then left as they were.
 */
function newReasons(waiting: Map<string, string>, rows: Map<string, CandidateRow>): Map<string, string> {
  const changed = new Map<string, string>();
  for (const [guid, reason] of waiting) if (rows.get(guid)?.last_dispatch_error !== reason) changed.set(guid, reason);
  return changed;
}

function candidateOf(row: CandidateRow): ClaimCandidate {
  return {
    guid: row.guid,
    requirement: { runtimeType: row.runtime_type, labels: row.dispatcher_labels ?? {}, slug: row.requested_dispatcher },
    concurrencyKey: row.concurrency_key,
    concurrencyLimit: row.concurrency_limit,
  };
}
