import { DataSource } from 'typeorm';
import { Dispatcher } from '../../src/controller/dispatchers/dispatchers.entity';
import { QueueClaim } from '../../src/controller/scheduling/queue-claim';
import { Task } from '../../src/controller/tasks/tasks.entity';
import { TasksRepository } from '../../src/controller/tasks/tasks.repository';
import { sentStatements, statementsDuring } from '../harness/pg-statements';
import { controllerDatabase, makeTaskRow, repositoryOn } from './controller-tasks';

/** The queue's claim on PostgreSQL (issue 21, items 0 to 3): order, fair share, limits, capacity. */
describe('the controller queue on PostgreSQL', () => {
  let sources: DataSource[];
  let close: () => Promise<void>;
  let tasks: TasksRepository;
  let queue: QueueClaim;
  let replica: QueueClaim;

  beforeAll(async () => {
    ({ sources, close } = await controllerDatabase(2));
    tasks = repositoryOn(sources[0]);
    [queue, replica] = sources.map((source) => new QueueClaim(source));
  });
  afterAll(() => close());
  /** Each test starts from an empty queue and a dispatcher of the capacity it names (null: none reported). */
  const reset = async (capacity: number | null) => {
    await sources[0].query(`DELETE FROM "controller"."tasks"`);
    await sources[0].query(`DELETE FROM "controller"."dispatchers"`);
    const [row] = await sources[0].query(
      `INSERT INTO "controller"."dispatchers" (name, slug, endpoint_url, heartbeat_interval_seconds, last_heartbeat_at, backends, capacity)
       VALUES ('d', 'd', 'http://127.0.0.1:1', 30, now(), '["local"]', $1) RETURNING guid`,
      [capacity],
    );
    return row.guid as string;
  };
  const post = (overrides: Partial<Task> = {}) => tasks.insert(makeTaskRow({ fairnessGroup: 'creator:operator:a', ...overrides }));
  /** What a capacity-N dispatcher does: takes a claim, runs it to the end. */
  const runClaimed = async (claimed: Task[]) => {
    await tasks.transitionMany(claimed.map((task) => task.guid), 'dispatched');
    await tasks.transitionMany(claimed.map((task) => task.guid), 'completed');
  };

  it('starts a priority-100 task posted behind 1,000 equal ones next', async () => {
    await reset(null);
    await sources[0].query(
      `INSERT INTO "controller"."tasks" (guid, agent_image, runtime_target, resources, timeout_seconds, brief_key, fairness_group)
       SELECT gen_random_uuid(), 'flood', '{"type":"local","namespace":""}', '{}', 60, 'b', 'creator:operator:a' FROM generate_series(1, 1000)`,
    );
    const urgent = await post({ priority: 100, agentImage: 'urgent' });
    const [next] = await queue.claim(1, 60);
    expect(next.guid).toBe(urgent.guid);
  });

  it('records, when asked, the dispatcher it chose for each task as an offer would: token hash, slug, one more attempt', async () => {
    const dispatcher = await reset(5);
    const first = await post({ agentImage: 'first' });
    const retried = await post({ agentImage: 'retried', dispatcherTaskId: '0b6c1f43-7b8e-4c55-9a53-2a4f3a1d9e10', attempt: 2 });
    const arm = (dispatcherTaskId: string, dispatcherGuid: string) => `hash:${dispatcherTaskId}:${dispatcherGuid}`;
    const statements = sentStatements();
    const batch = await queue.claimBatch(5, 60, arm);
    statements.stop();
    expect(statements.texts.filter((text) => /callback_token_hash/.test(text))).toHaveLength(1);
    expect([...batch.armed].sort()).toEqual([first.guid, retried.guid].sort());
    const stored = await Promise.all([first, retried].map(async (task) => (await tasks.findByGuid(task.guid))!));
    expect(stored.map((task) => [task.callbackTokenHash, task.dispatcherGuid, task.dispatcherSlug, task.dispatchAttempts, task.status])).toEqual([
      [`hash:${first.guid}:${dispatcher}`, dispatcher, 'd', 1, 'pending'],
      [`hash:0b6c1f43-7b8e-4c55-9a53-2a4f3a1d9e10:${dispatcher}`, dispatcher, 'd', 1, 'pending'],
    ]);
    expect(batch.tasks.map((task) => task.callbackTokenHash)).toEqual(stored.map((task) => task.callbackTokenHash));

    // Not asked: the claim takes the task and leaves the offer's record to the sender.
    const plain = await post({ agentImage: 'plain' });
    const unarmed = await replica.claimBatch(5, 60);
    expect(unarmed.tasks.map((task) => task.guid)).toEqual([plain.guid]);
    expect(unarmed.armed.size).toBe(0);
    expect(await tasks.findByGuid(plain.guid)).toMatchObject({ callbackTokenHash: null, dispatcherGuid: dispatcher, dispatcherSlug: null, dispatchAttempts: 0 });

    // A dispatcher that reports no capacity holds no slot: the sender picks, and records its offer itself.
    await sources[0].query(`UPDATE "controller"."dispatchers" SET capacity = NULL`);
    const open = await post({ agentImage: 'open' });
    expect((await queue.claimBatch(5, 60, arm)).armed.size).toBe(0);
    expect(await tasks.findByGuid(open.guid)).toMatchObject({ callbackTokenHash: null, dispatchAttempts: 0 });
  });

  it('hands the sender the dispatchers and the slots others held, as the claim read them', async () => {
    const dispatcher = await reset(5);
    const running = await post({ agentImage: 'running' });
    await tasks.assign([{ guid: running.guid, dispatcherGuid: dispatcher, dispatcherSlug: 'd', callbackTokenHash: 'ab' }]);
    await tasks.transitionMany([running.guid], 'dispatched');
    const other = await replica.claimBatch(1, 60);
    expect(other.tasks).toHaveLength(0);
    const waiting = [await post({ agentImage: 'a' }), await post({ agentImage: 'b' })];
    const heldByReplica = await replica.claimBatch(1, 60);
    expect(heldByReplica.tasks.map((task) => task.guid)).toEqual([waiting[0].guid]);
    const batch = await queue.claimBatch(5, 60);
    expect(batch.tasks.map((task) => [task.guid, task.dispatcherGuid])).toEqual([[waiting[1].guid, dispatcher]]);
    expect(batch.dispatchers.map((known) => known.guid)).toEqual([dispatcher]);
    // Read with the claim's first candidates in one statement: each dispatcher as the repository loads it.
    await sources[0].query(`UPDATE "controller"."dispatchers" SET labels = '{"zone":"a"}', api_key_encrypted = 'v1:x', bound_to = 'operator'`);
    const again = await queue.claimBatch(1, 60);
    expect(again.dispatchers).toEqual(await sources[0].getRepository(Dispatcher).find());
    expect(again.dispatchers[0].lastHeartbeatAt).toBeInstanceOf(Date);
    expect(again.dispatchers[0].labels).toEqual({ zone: 'a' });
    // The dispatched task and the replica's claim: not this batch's own task, which its sender counts as it sends.
    expect(batch.held).toEqual(new Map([[dispatcher, 2]]));
  });

  it('claims in two round trips, each task as the repository loads it', async () => {
    await reset(5);
    const posted = await post({ env: { A: "it's" }, dispatcherLabels: { zone: 'a' } });
    const { result: batch, texts } = await statementsDuring(() => queue.claimBatch(5, 60));
    // The transaction, its lock and the opening read; the claim and COMMIT.
    expect(texts).toHaveLength(2);
    expect(texts[0]).toMatch(/^START TRANSACTION;\nSELECT pg_advisory_xact_lock\(\d+\);\nWITH held AS/);
    expect(texts[1]).toMatch(/;\nCOMMIT$/);
    expect(batch.tasks.map((task) => task.guid)).toEqual([posted.guid]);
    // With the inline brief, which the claim reads for its sender and lists never do.
    const loaded = await sources[0].getRepository(Task).findOneBy({ guid: posted.guid });
    expect(batch.tasks[0]).toEqual(Object.assign(loaded!, { briefPending: '{"prompt":"hello"}' }));
  });

  it('takes turns across fairness groups: 5 tasks behind a flood of 200 all start before its 20th', async () => {
    await reset(2);
    for (let i = 0; i < 200; i++) await post({ fairnessGroup: 'key:flood', agentImage: 'flood' });
    // The flood has begun when the small group arrives.
    await runClaimed(await queue.claim(2, 60));
    for (let i = 0; i < 5; i++) await post({ fairnessGroup: 'key:small', agentImage: 'small' });
    const started: string[] = [];
    while (started.filter((image) => image === 'small').length < 5) {
      const claimed = await queue.claim(2, 60);
      expect(claimed.length).toBeLessThanOrEqual(2);
      started.push(...claimed.map((task) => task.agentImage));
      await runClaimed(claimed);
    }
    expect(started.filter((image) => image === 'flood').length + 2).toBeLessThan(20);
  });

  it('gives a weight-2 group twice the dispatches of a weight-1 group while both have work', async () => {
    await reset(null);
    for (let i = 0; i < 60; i++) {
      await post({ fairnessGroup: 'workflow:heavy', fairnessWeight: 2, agentImage: 'heavy' });
      await post({ fairnessGroup: 'workflow:light', fairnessWeight: 1, agentImage: 'light' });
    }
    const first = await queue.claim(30, 60);
    expect(first.filter((task) => task.agentImage === 'heavy')).toHaveLength(20);
    expect(first.filter((task) => task.agentImage === 'light')).toHaveLength(10);
  });

  it('holds a key at its limit and says why its other tasks wait', async () => {
    await reset(null);
    const keyed = [];
    for (let i = 0; i < 5; i++) keyed.push(await post({ concurrencyKey: 'acme/app', concurrencyLimit: 2, concurrencyStrategy: 'queue', fairnessGroup: 'key:acme/app' }));
    const other = await post({ agentImage: 'other' });
    const claimed = await queue.claim(10, 60);
    expect(claimed.map((task) => task.guid).sort()).toEqual([keyed[0].guid, keyed[1].guid, other.guid].sort());
    expect((await tasks.findByGuid(keyed[2].guid))!.lastDispatchError).toBe('concurrency limit of acme/app reached (2/2)');
    // Claimed and not yet dispatched counts: another claim takes nothing of the key.
    expect(await replica.claim(10, 60)).toEqual([]);
    await tasks.transitionMany([keyed[1].guid, other.guid], 'dispatched');
    await runClaimed([keyed[0]]);
    await tasks.releaseClaims(claimed.map((task) => task.guid));
    expect((await replica.claim(10, 60)).map((task) => task.guid)).toEqual([keyed[2].guid]);
  });

  it('sends a dispatcher only what its free slots take, and everything to one that reports no capacity', async () => {
    const dispatcher = await reset(3);
    for (let i = 0; i < 10; i++) await post();
    const claimed = await queue.claim(64, 60);
    expect(claimed).toHaveLength(3);
    expect(new Set(claimed.map((task) => task.dispatcherGuid))).toEqual(new Set([dispatcher]));
    expect(await replica.claim(64, 60)).toEqual([]);
    const [waiting] = await sources[0].query(`SELECT last_dispatch_error FROM "controller"."tasks" WHERE dispatch_claimed_until IS NULL LIMIT 1`);
    expect(waiting.last_dispatch_error).toBe('Every fitting dispatcher is busy (d 3/3); the task waits for a free slot.');
    await sources[0].query(`UPDATE "controller"."dispatchers" SET capacity = NULL`);
    expect(await replica.claim(64, 60)).toHaveLength(7);
  });

  it('tells a waiting task its reason once, and again only when the reason changes', async () => {
    await reset(2);
    const posted = [];
    for (let i = 0; i < 6; i++) posted.push(await post());
    expect(await queue.claim(64, 60)).toHaveLength(2);
    const busy = 'Every fitting dispatcher is busy (d 2/2); the task waits for a free slot.';
    const reasons = async () => (await sources[0].query(`SELECT last_dispatch_error AS reason, updated_at FROM "controller"."tasks" WHERE dispatch_claimed_until IS NULL ORDER BY guid`)) as { reason: string; updated_at: Date }[];
    const told = await reasons();
    expect(told.map((row) => row.reason)).toEqual(Array(4).fill(busy));
    // The same reason again: no statement writes it, and the rows are as they were.
    const sent = await statementsDuring(() => replica.claim(64, 60));
    expect(sent.result).toEqual([]);
    expect(sent.texts.join('\n')).not.toContain('last_dispatch_error = v.reason');
    expect(await reasons()).toEqual(told);
    // A dispatcher with a larger capacity: the reason the rest wait for changes, and is written.
    await sources[0].query(`UPDATE "controller"."dispatchers" SET capacity = 3`);
    expect(await queue.claim(64, 60)).toHaveLength(1);
    expect((await reasons()).map((row) => row.reason)).toEqual(Array(3).fill('Every fitting dispatcher is busy (d 3/3); the task waits for a free slot.'));
  });

  it('reads a first page sized by the free slots, and still finds a deeper task that a free slot fits', async () => {
    const busy = await reset(2);
    const [other] = await sources[0].query(
      `INSERT INTO "controller"."dispatchers" (name, slug, endpoint_url, heartbeat_interval_seconds, last_heartbeat_at, backends, capacity)
       VALUES ('e', 'e', 'http://127.0.0.1:2', 30, now(), '["local"]', 1) RETURNING guid`,
    );
    for (const agentImage of ['running-1', 'running-2']) {
      const running = await post({ agentImage, requestedDispatcher: 'd' });
      await tasks.assign([{ guid: running.guid, dispatcherGuid: busy, dispatcherSlug: 'd', callbackTokenHash: 'ab' }]);
      await tasks.transitionMany([running.guid], 'dispatched');
    }
    // 100 tasks for the full dispatcher, then one for the free one.
    await sources[0].query(
      `INSERT INTO "controller"."tasks" (guid, agent_image, runtime_target, resources, timeout_seconds, brief_key, fairness_group, requested_dispatcher)
       SELECT gen_random_uuid(), 'for-d', '{"type":"local","namespace":""}', '{}', 60, 'b', 'creator:operator:a', 'd' FROM generate_series(1, 100)`,
    );
    const deep = await post({ agentImage: 'for-e', requestedDispatcher: 'e' });
    const { result: claimed, texts: sent } = await statementsDuring(() => queue.claim(64, 60));
    expect(claimed.map((task) => [task.guid, task.dispatcherGuid])).toEqual([[deep.guid, other.guid]]);
    // One slot free: the opening read 32 tasks; the next page (the rest, as far as a full window) found the task.
    expect(sent).toHaveLength(3);
    const told = async () => Number((await sources[0].query(`SELECT count(*) FROM "controller"."tasks" WHERE agent_image = 'for-d' AND last_dispatch_error IS NOT NULL`))[0].count);
    expect(await told()).toBe(100);

    // No slot free anywhere: a claim reads its first page only, and tells those tasks why they wait.
    await sources[0].query(`UPDATE "controller"."tasks" SET last_dispatch_error = NULL`);
    expect(await replica.claim(64, 60)).toEqual([]);
    const reasons = await sources[0].query(`SELECT last_dispatch_error AS reason FROM "controller"."tasks" WHERE agent_image = 'for-d' AND last_dispatch_error IS NOT NULL`);
    expect(reasons).toHaveLength(32);
    expect(new Set(reasons.map((row: { reason: string }) => row.reason))).toEqual(new Set(['Every fitting dispatcher is busy (d 2/2); the task waits for a free slot.']));

    // A dispatcher that reports no capacity may take every task: the page is a full window.
    await sources[0].query(`UPDATE "controller"."dispatchers" SET capacity = NULL WHERE guid = $1`, [other.guid]);
    await sources[0].query(`UPDATE "controller"."tasks" SET requested_dispatcher = NULL WHERE agent_image = 'for-d'`);
    expect(await queue.claim(64, 60)).toHaveLength(64);
  });

  it('never lets two replicas claiming at once exceed a key limit or a dispatcher capacity', async () => {
    await reset(4);
    for (let i = 0; i < 30; i++) await post({ concurrencyKey: 'k', concurrencyLimit: 3, concurrencyStrategy: 'queue', fairnessGroup: 'key:k' });
    for (let i = 0; i < 30; i++) await post();
    const claims = await Promise.all([1, 2, 3, 4].flatMap(() => [queue.claim(2, 60), replica.claim(2, 60)]));
    const claimed = claims.flat();
    expect(claimed).toHaveLength(4);
    expect(claimed.filter((task) => task.concurrencyKey === 'k').length).toBeLessThanOrEqual(3);
  });
});
