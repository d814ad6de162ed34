import { runAgent, say } from './run-agent';

/** Checks in, then checks back failed with an error, as an agent that gives up would. */
runAgent('fail', async (agent) => {
  await agent.checkin();
  const error = process.env.FAIL_MESSAGE ?? 'the example agent failed on purpose';
  await agent.checkback({ status: 'failed', error, result_metadata: { reason: 'example' } });
  say('fail', `checked back failed: ${error}`, process.stderr);
});
