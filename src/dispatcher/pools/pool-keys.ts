import { createHmac } from 'node:crypto';

/**
 * The key every agent of one pool starts with: hex HMAC-SHA256(AGENT_KEY, "pool:" + name). It
 * opens `POST /agent/claim` for that pool only; it is no task's key (a task's is the HMAC of its
 * UUID), so check-in, progress, check-back and objects refuse it.
 */
export function poolAgentKey(agentKey: string, pool: string): string {
  return createHmac('sha256', agentKey).update(`pool:${pool}`).digest('hex');
}
