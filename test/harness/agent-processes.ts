import { readdirSync, readFileSync } from 'node:fs';

/** Process ids on this host whose environment says they are the agent of `taskId`. */
export function agentProcesses(taskId: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/environ`, 'latin1').split('\0').includes(`TASK_ID=${taskId}`)) found.push(Number(entry));
    } catch {
      // ended meanwhile, or not ours to read
    }
  }
  return found;
}

/** SIGKILLs the agents of these tasks (left behind by a dispatcher that was killed and never came back). */
export function killAgents(taskIds: string[]): void {
  for (const pid of taskIds.flatMap(agentProcesses)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}
