import { AgentClient } from '@agent-task/agent-sdk';

/** A line of the agent's output; the dispatcher keeps it and shows it as the task's logs. */
export function say(name: string, message: string, stream: NodeJS.WriteStream = process.stdout): void {
  stream.write(`[${name}] ${message}\n`);
}

/**
 * Runs an example agent's body with a client built from the environment. An unexpected
 * error is printed and the process exits 1 without checking back, as a real crash would.
 */
export function runAgent(name: string, body: (agent: AgentClient) => Promise<void>): void {
  const started = (async () => {
    const agent = AgentClient.fromEnv();
    // A warm pool's agent: started before its task, it waits here for the one assigned to it.
    if (agent.pool) say(name, `warm in pool ${agent.pool.name}; waiting for a task`);
    await agent.claim();
    say(name, `task ${agent.taskId} starting`);
    await body(agent);
  })();
  started.catch((error: unknown) => {
    say(name, error instanceof Error ? error.message : String(error), process.stderr);
    process.exit(1);
  });
}
