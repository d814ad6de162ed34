import { createHmac } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { Client } from 'pg';
import { http } from './http';
import { TestSystem } from './system';
import { waitFor } from './wait';

/** A WARM_POOLS entry for the local backend; override any field. */
export function makePool(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { name: 'echo', image: 'agent-examples/echo', backend: 'local', size: 2, resources: { cpu: '1', memory: '512Mi' }, ...overrides };
}

export function poolKeyOf(system: TestSystem, pool: string): string {
  return createHmac('sha256', system.agentKey).update(`pool:${pool}`).digest('hex');
}

/** Each pool's `{size, idle}` as `/ready` reports them. */
export async function readyPools(system: TestSystem): Promise<Record<string, { size: number; idle: number }>> {
  const answer = await http('GET', `${system.dispatcherUrl}/ready`);
  return answer.body?.details?.warm_pools?.pools ?? {};
}

export function waitForIdle(system: TestSystem, pool: string, idle: number, timeoutMs = 20_000): Promise<unknown> {
  return waitFor(async () => (await readyPools(system))[pool]?.idle === idle, timeoutMs, `pool ${pool} to have ${idle} idle agents`);
}

export interface PoolAgentRow {
  agent_id: string;
  pool: string;
  state: string;
  task_id: string | null;
  runtime_ref: string | null;
  /** Milliseconds since the epoch, as PostgreSQL stamped them (to the microsecond, truncated). */
  created_ms: number;
  claimed_ms: number | null;
}

/** The pool agents table as the dispatcher left it. */
export async function poolAgents(system: TestSystem): Promise<PoolAgentRow[]> {
  const client = new Client({ connectionString: system.config.databaseUrl! });
  await client.connect();
  try {
    const { rows } = await client.query(`SELECT agent_id, pool, state, task_id, runtime_ref, floor(extract(epoch FROM created_at) * 1e6)::float8 / 1e3 AS created_ms,
              floor(extract(epoch FROM claimed_at) * 1e6)::float8 / 1e3 AS claimed_ms
         FROM "dispatcher"."pool_agents" ORDER BY created_at`);
    return rows as PoolAgentRow[];
  } finally {
    await client.end();
  }
}

export function claimApi(system: TestSystem, key: string) {
  return (body: unknown, waitSeconds = 0) =>
    http('POST', `${system.dispatcherUrl}/agent/claim?wait_seconds=${waitSeconds}`, { json: body, headers: { 'X-Agent-Key': key } });
}

/** Process ids on this host whose environment says they are the pool agent `agentId`. */
export function poolAgentProcesses(agentId: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/environ`, 'latin1').split('\0').includes(`AGENT_ID=${agentId}`)) found.push(Number(entry));
    } catch {
      // ended meanwhile, or not ours to read
    }
  }
  return found;
}

/** SIGKILLs every process of these pool agents (the dispatcher leaves its idle agents running when it stops, for the next one to adopt). */
export function killPoolAgents(agentIds: string[]): void {
  for (const pid of agentIds.flatMap(poolAgentProcesses)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** Waits until `count` agents of the pool are idle and handed to their runtime (whether or not they ask for a claim). */
export function waitForStarted(system: TestSystem, pool: string, count: number, timeoutMs = 20_000): Promise<unknown> {
  return waitFor(async () => (await poolAgents(system)).filter((row) => row.pool === pool && row.state === 'idle' && row.runtime_ref).length >= count, timeoutMs, `pool ${pool} to have ${count} started agents`);
}
