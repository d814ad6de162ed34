import { runAgent, say } from './run-agent';

/**
 * Checks in and sleeps SLEEP_SECONDS (default 3600); SIGTERM ends it with 143. LINGER_MS
 * (default 0) is a tidy-up after its check-back, before its last line and its exit.
 */
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
  const linger = Number(process.env.LINGER_MS ?? 0);
  if (linger > 0) await new Promise((resolve) => setTimeout(resolve, linger));
  say('sleep', 'completed');
});
