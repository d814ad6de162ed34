import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { Task } from '../../src/controller/tasks/tasks.entity';
import { TaskAttemptsRepository } from '../../src/controller/scheduling/task-attempts.repository';
import { TaskRetriesService } from '../../src/controller/scheduling/task-retries.service';
import { TasksRepository } from '../../src/controller/tasks/tasks.repository';
import { roleDataSourceOptions } from '../../src/shared/database/data-sources';
import { runMigrations } from '../../src/shared/database/migrate';
import { SCHEMA_PARTS } from '../../src/shared/database/schema-parts';
import { freshDatabaseUrl } from '../harness/database';

/**
 * The controller's schema on a fresh database with every migration applied, and as many
 * independent connection pools on it as a spec asks for (each one a replica), of `poolSize`
 * connections each (1: the embedded database's pool).
 */
export async function controllerDatabase(pools = 1, poolSize = 4): Promise<{ sources: DataSource[]; close: () => Promise<void> }> {
  const url = await freshDatabaseUrl();
  const options = (poolSize: number) => roleDataSourceOptions('controller', { url, poolSize, migrationsRun: false }, SCHEMA_PARTS.controller);
  await runMigrations(options(1));
  const sources = await Promise.all(Array.from({ length: pools }, () => new DataSource(options(poolSize)).initialize()));
  return { sources, close: async () => void (await Promise.all(sources.map((source) => source.destroy()))) };
}

/** A new task's columns, as POST /tasks/ stores them. */
export function makeTaskRow(overrides: Partial<Task> = {}): Partial<Task> & { guid: string } {
  const guid = randomUUID();
  return {
    guid,
    status: 'pending',
    agentImage: 'agent-examples/echo',
    runtimeTarget: { type: 'local', namespace: '' },
    resources: { cpu: '500m', memory: '512Mi' },
    timeoutSeconds: 600,
    briefKey: `briefs/${guid}.json`,
    briefPending: '{"prompt":"hello"}',
    ...overrides,
  };
}

/** Inserts a dispatcher row to point tasks at. */
export async function insertDispatcher(source: DataSource, name: string): Promise<string> {
  const [row] = await source.query(
    `INSERT INTO "controller"."dispatchers" (name, slug, endpoint_url, heartbeat_interval_seconds, last_heartbeat_at)
     VALUES ($1, $1, 'http://127.0.0.1:1', 30, now()) RETURNING guid`,
    [name],
  );
  return row.guid as string;
}

export const repositoryOn = (source: DataSource) => new TasksRepository(source);

/** The retry decision on one replica's pool, as the dispatch loop, the callbacks and the watchdog use it. */
export const retriesOn = (source: DataSource) => new TaskRetriesService(new TasksRepository(source), new TaskAttemptsRepository(source));
