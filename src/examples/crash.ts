import { runAgent, say } from './run-agent';

/** Checks in, then exits 3 without checking back, as a crashing agent would. */
runAgent('crash', async (agent) => {
  await agent.checkin();
  say('crash', 'exiting with code 3 without checking back', process.stderr);
  process.exit(3);
});
