import { runAgent, say } from './run-agent';

/** Checks in and sleeps SLEEP_SECONDS (default 3600); SIGTERM ends it with 143. */
runAgent('sleep', async (agent) => {
  process.on('SIGTERM', () => {
    say('sleep', 'SIGTERM received, exiting');
    process.exit(143);
  });
  await agent.checkin();
  const seconds = Number(process.env.SLEEP_SECONDS ?? 3600);
  say('sleep', `sleeping ${seconds} s`);
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  await agent.checkback({ status: 'completed', result_metadata: { slept_seconds: seconds } });
  say('sleep', 'completed');
});
