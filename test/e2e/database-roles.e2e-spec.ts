import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { createTask, getTask, operator } from '../harness/controller-tasks';
import { freshDatabaseUrl } from '../harness/database';
import { http } from '../harness/http';
import { startTestSystem, TestSystem } from '../harness/system';
import { waitFor } from '../harness/wait';

jest.setTimeout(90_000);

/** Runs `sql` as `user` (trust authentication on loopback here); the error's SQLSTATE, or null when it ran. */
async function sqlStateAs(url: string, sql: string): Promise<string | null> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
    return null;
  } catch (error) {
    return (error as { code?: string }).code ?? 'unknown';
  } finally {
    await client.end();
  }
}

/**
 * One database role per component (the chart's database.controllerUrl and dispatcherUrl):
 * each role owns its own schema and has no right on the database or on the other schema;
 * both migrate and run a task end to end, and neither can read the other's tables.
 */
describe('one PostgreSQL role per component', () => {
  const suffix = randomBytes(3).toString('hex');
  const roles = { controller: `atc_controller_${suffix}`, dispatcher: `atc_dispatcher_${suffix}` };
  let adminUrl: string;
  let controller: TestSystem;
  let dispatcher: TestSystem;
  const urlOf = (role: string) => Object.assign(new URL(adminUrl), { username: role }).toString();

  beforeAll(async () => {
    adminUrl = await freshDatabaseUrl();
    const admin = new Client({ connectionString: adminUrl });
    await admin.connect();
    const database = new URL(adminUrl).pathname.slice(1);
    for (const [schema, role] of Object.entries(roles)) {
      await admin.query(`CREATE ROLE "${role}" LOGIN`);
      await admin.query(`CREATE SCHEMA "${schema}" AUTHORIZATION "${role}"`);
    }
    await admin.query(`REVOKE ALL ON DATABASE "${database}" FROM PUBLIC`);
    await admin.query(`GRANT CONNECT ON DATABASE "${database}" TO "${roles.controller}", "${roles.dispatcher}"`);
    await admin.end();

    controller = await startTestSystem({ role: 'controller', storage: 's3', databaseUrl: urlOf(roles.controller) });
    dispatcher = await startTestSystem({
      role: 'dispatcher', storage: 's3', databaseUrl: urlOf(roles.dispatcher),
      env: {
        CONTROLLER_URL: controller.controllerUrl, CONTROLLER_TOKEN: controller.apiToken, DISPATCHER_NAME: 'own-role',
        CALLBACK_SIGNING_KEY: controller.config.callbackSigningKey ?? undefined, S3_BUCKET: controller.config.s3!.bucket,
      },
    });
  });
  afterAll(async () => {
    await dispatcher?.close();
    await controller?.close();
    const admin = new Client({ connectionString: adminUrl });
    await admin.connect();
    try {
      // Roles belong to the cluster, not to the test database: drop what they own and hold, then them.
      for (const role of Object.values(roles)) {
        await admin.query(`DROP OWNED BY "${role}" CASCADE`);
        await admin.query(`DROP ROLE IF EXISTS "${role}"`);
      }
    } finally {
      await admin.end();
    }
  });

  it('migrates and runs a task with each role on its own credential', async () => {
    await waitFor(async () => (await http('GET', `${controller.controllerUrl}/api/v1/dispatchers/own-role/`, { headers: operator(controller) })).body.state === 'online', 20_000, 'the dispatcher to check in');
    const created = await createTask(controller);
    expect(created.status).toBe(201);
    const task = await waitFor(async () => {
      const answer = await getTask(controller, created.body.guid);
      return answer.body.status === 'completed' ? answer.body : null;
    }, 40_000, 'the task to complete');
    expect(task).toMatchObject({ status: 'completed', dispatcher: 'own-role' });
  });

  it("refuses each role the other's tables and the right to create schemas", async () => {
    expect(await sqlStateAs(urlOf(roles.controller), 'SELECT count(*) FROM dispatcher.tasks')).toBe('42501');
    expect(await sqlStateAs(urlOf(roles.dispatcher), 'SELECT count(*) FROM controller.tasks')).toBe('42501');
    expect(await sqlStateAs(urlOf(roles.dispatcher), 'CREATE SCHEMA elsewhere')).toBe('42501');
    expect(await sqlStateAs(urlOf(roles.controller), 'SELECT count(*) FROM controller.tasks')).toBeNull();
  });
});
