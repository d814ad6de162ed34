// The agent a Node container image runs (test/harness/node-agent-image.ts bundles it): the agent
// SDK built from the environment, TRACEPARENT included, checks in, reports progress and checks
// back, so its calls carry the task's trace context from inside the container.
import { AgentClient } from '../../../packages/agent-sdk/src/index';

async function main(): Promise<void> {
  const agent = AgentClient.fromEnv();
  process.stdout.write(`sdk agent for task ${agent.taskId}, TRACEPARENT ${process.env.TRACEPARENT ?? '(none)'}\n`);
  await agent.checkin();
  await agent.progress(50, 'working inside a container');
  await agent.checkback({ status: 'completed', result_metadata: { agent: 'sdk-agent' } });
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
