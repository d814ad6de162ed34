import { AuditRepository } from '../../src/controller/audit/audit.repository';
import { EventsRepository } from '../../src/controller/events/events.repository';
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DataSource } from 'typeorm';
import { ControllerRetention } from '../../src/controller/controller-retention';
import { SubscriptionOutbox } from '../../src/controller/subscriptions/subscription-outbox';
import { TasksRepository as ControllerTasks } from '../../src/controller/tasks/tasks.repository';
import { DeliveryLedger } from '../../src/controller/webhooks/delivery-ledger';
import { DispatcherRetention } from '../../src/dispatcher/dispatcher-retention';
import { agentLogDir } from '../../src/dispatcher/runtime/process-runtime';
import { OBJECT_STORAGE, ObjectStorage } from '../../src/shared/storage/object-storage';
import { startTestSystem, TestSystem } from '../harness/system';

/**
 * TASK_RETENTION_DAYS (30), DELIVERY_RETENTION_DAYS (14) and AUDIT_RETENTION_DAYS (365) on both roles, on the real
 * PostgreSQL and the S3 server: what goes, what stays, replicas sweeping at once, and 0.
 */
describe('retention', () => {
  let system: TestSystem;
  let replica: TestSystem;
  let db: DataSource;
  let storage: ObjectStorage;

  beforeAll(async () => {
    system = await startTestSystem({ storage: 's3' });
    replica = await startTestSystem({
      role: 'controller', storage: 's3', databaseUrl: system.config.databaseUrl!,
      env: { SECRET_KEY: system.config.secretKey, S3_BUCKET: system.config.s3!.bucket },
    });
    db = system.controller!.get(DataSource);
    storage = system.controller!.get(OBJECT_STORAGE);
  });
  afterAll(async () => {
    await replica?.close();
    await system?.close();
  });

  const daysAgo = (days: number) => new Date(Date.now() - days * 24 * 3600 * 1000);

  async function controllerTask(fields: { status: string; finishedDaysAgo?: number; briefKey?: string }): Promise<string> {
    const guid = randomUUID();
    await db.query(
      `INSERT INTO "controller"."tasks" (guid, status, agent_image, runtime_target, resources, timeout_seconds, brief_key, created_at, finished_at)
       VALUES ($1, $2, 'agent-examples/echo', '{"type":"local","namespace":""}', '{}', 60, $3, $4, $5)`,
      [guid, fields.status, fields.briefKey ?? `briefs/${guid}.json`, daysAgo(60), fields.finishedDaysAgo === undefined ? null : daysAgo(fields.finishedDaysAgo)],
    );
    return guid;
  }

  async function dispatcherTask(fields: { status: string; finishedDaysAgo: number; callback?: 'pending' | 'delivered' | 'failed' }): Promise<string> {
    const id = randomUUID();
    await db.query(
      `INSERT INTO "dispatcher"."tasks" (task_id, agent_image, runtime_type, resources, env, ports, callback_url, callback_token_sealed,
                                         timeout_seconds, request_digest, status, finished_at)
       VALUES ($1, 'agent-examples/echo', 'local', '{}', '{}', '[]', 'http://127.0.0.1:1/cb', 'sealed', 60, 'digest', $2, $3)`,
      [id, fields.status, daysAgo(fields.finishedDaysAgo)],
    );
    if (fields.callback) {
      await db.query(`INSERT INTO "dispatcher"."callback_outbox" (task_id, body, state) VALUES ($1, '{}', $2)`, [id, fields.callback]);
    }
    return id;
  }

  const exists = async (table: string, column: string, id: string) =>
    (await db.query(`SELECT 1 FROM ${table} WHERE ${column} = $1`, [id])).length === 1;
  const put = (key: string) => storage.put(key, Buffer.from('{}'), { contentType: 'application/json' });

  it('deletes final controller tasks past TASK_RETENTION_DAYS with the briefs it wrote, and nothing else', async () => {
    const old = await controllerTask({ status: 'completed', finishedDaysAgo: 31 });
    await put(`briefs/${old}.json`);
    const callersBrief = `briefs/callers-${randomUUID()}.json`;
    await put(callersBrief);
    const oldWithCallersBrief = await controllerTask({ status: 'failed', finishedDaysAgo: 45, briefKey: callersBrief });
    const recent = await controllerTask({ status: 'completed', finishedDaysAgo: 29 });
    await put(`briefs/${recent}.json`);
    const stillRunning = await controllerTask({ status: 'running' });

    await system.controller!.get(ControllerRetention).sweepAll();

    expect(await exists('"controller"."tasks"', 'guid', old)).toBe(false);
    expect(await storage.exists(`briefs/${old}.json`)).toBe(false);
    expect(await exists('"controller"."tasks"', 'guid', oldWithCallersBrief)).toBe(false);
    expect(await storage.exists(callersBrief)).toBe(true);
    expect(await exists('"controller"."tasks"', 'guid', recent)).toBe(true);
    expect(await storage.exists(`briefs/${recent}.json`)).toBe(true);
    expect(await exists('"controller"."tasks"', 'guid', stillRunning)).toBe(true);
  });

  it('deletes ledger rows past DELIVERY_RETENTION_DAYS; a newer replay of one loses only the link', async () => {
    const insert = async (receivedDaysAgo: number, replayOf: string | null = null) => {
      const [row] = await db.query(
        `INSERT INTO "controller"."webhook_deliveries" (source, event, outcome, received_at, replay_of) VALUES ('forge', 'push', 'ignored', $1, $2) RETURNING id`,
        [daysAgo(receivedDaysAgo), replayOf],
      );
      return row.id as string;
    };
    const old = await insert(15);
    const replay = await insert(1, old);
    const recent = await insert(13);
    await system.controller!.get(ControllerRetention).sweepAll();
    expect(await exists('"controller"."webhook_deliveries"', 'id', old)).toBe(false);
    expect(await exists('"controller"."webhook_deliveries"', 'id', recent)).toBe(true);
    const [kept] = await db.query(`SELECT replay_of FROM "controller"."webhook_deliveries" WHERE id = $1`, [replay]);
    expect(kept.replay_of).toBeNull();
  });

  it('deletes dispatcher tasks past retention with their results, logs and outbox rows, never one with a callback to deliver', async () => {
    const delivered = await dispatcherTask({ status: 'completed', finishedDaysAgo: 40, callback: 'delivered' });
    const gaveUp = await dispatcherTask({ status: 'failed', finishedDaysAgo: 40, callback: 'failed' });
    const undelivered = await dispatcherTask({ status: 'completed', finishedDaysAgo: 40, callback: 'pending' });
    const recent = await dispatcherTask({ status: 'completed', finishedDaysAgo: 2, callback: 'delivered' });
    for (const id of [delivered, undelivered, recent]) {
      await put(`results/${id}/result.json`);
      await put(`results/${id}/nested/more.json`);
      await put(`logs/${id}.txt`);
    }
    const logs = agentLogDir(system.config.dataDir);
    fs.mkdirSync(logs, { recursive: true });
    const oldLog = path.join(logs, `${delivered}.log`);
    const newLog = path.join(logs, `${recent}.log`);
    fs.writeFileSync(oldLog, 'old output\n');
    fs.writeFileSync(newLog, 'new output\n');
    fs.utimesSync(oldLog, daysAgo(40), daysAgo(40));

    await system.dispatcher!.get(DispatcherRetention).sweepAll();

    for (const id of [delivered, gaveUp]) {
      expect(await exists('"dispatcher"."tasks"', 'task_id', id)).toBe(false);
      expect(await exists('"dispatcher"."callback_outbox"', 'task_id', id)).toBe(false);
    }
    expect(await storage.exists(`results/${delivered}/result.json`)).toBe(false);
    expect(await storage.exists(`results/${delivered}/nested/more.json`)).toBe(false);
    expect(await storage.exists(`logs/${delivered}.txt`)).toBe(false);
    for (const id of [undelivered, recent]) {
      expect(await exists('"dispatcher"."tasks"', 'task_id', id)).toBe(true);
      expect(await exists('"dispatcher"."callback_outbox"', 'task_id', id)).toBe(true);
      expect(await storage.exists(`results/${id}/result.json`)).toBe(true);
      expect(await storage.exists(`logs/${id}.txt`)).toBe(true);
    }
    expect(fs.existsSync(oldLog)).toBe(false);
    expect(fs.existsSync(newLog)).toBe(true);
  });

  it('lets two replicas sweep a backlog at once: each task deleted once, in small batches, without an error', async () => {
    const backlog: string[] = [];
    for (let i = 0; i < 1200; i += 1) backlog.push(await controllerTask({ status: 'cancelled', finishedDaysAgo: 100 }));
    const [here, there] = await Promise.all([
      system.controller!.get(ControllerRetention).sweepAll(),
      replica.controller!.get(ControllerRetention).sweepAll(),
    ]);
    expect(here.get('final tasks')! + there.get('final tasks')!).toBe(1200);
    const [left] = await db.query(`SELECT count(*)::int AS n FROM "controller"."tasks" WHERE guid = ANY($1)`, [backlog]);
    expect(left.n).toBe(0);
  });

  it('deletes audit rows past AUDIT_RETENTION_DAYS (365) and keeps younger ones', async () => {
    const audit = async (daysOld: number) => {
      const [row] = await db.query(
        `INSERT INTO "controller"."audit_entries" (at, actor_kind, actor_id, actor_name, action, resource_type, outcome, status_code)
         VALUES ($1, 'operator', 'x', 'retention', 'tasks.cancel', 'task', 'succeeded', 200) RETURNING id`,
        [daysAgo(daysOld)],
      );
      return row.id as string;
    };
    const [old, young] = [await audit(366), await audit(364)];
    const swept = await system.controller!.get(ControllerRetention).sweepAll();
    expect(swept.get('audit entries')).toBeGreaterThanOrEqual(1);
    expect(await exists('"controller"."audit_entries"', 'id', old)).toBe(false);
    expect(await exists('"controller"."audit_entries"', 'id', young)).toBe(true);
  });

  it('keeps everything when the settings are 0', async () => {
    const old = await controllerTask({ status: 'completed', finishedDaysAgo: 400 });
    const keepAll = new ControllerRetention(
      system.controller!.get(ControllerTasks),
      system.controller!.get(DeliveryLedger),
      system.controller!.get(EventsRepository),
      storage,
      { ...system.config, taskRetentionDays: 0, deliveryRetentionDays: 0, auditRetentionDays: 0 },
      system.controller!.get(SubscriptionOutbox),
      system.controller!.get(AuditRepository),
    );
    // Events are a bounded window whatever the task settings: only they are swept.
    expect([...(await keepAll.sweepAll()).keys()]).toEqual(['events']);
    expect(await exists('"controller"."tasks"', 'guid', old)).toBe(true);
  });
});
