import { runAgent, say } from './run-agent';

/** Reads the brief, reports progress, writes `result.json` echoing the brief, completes. */
runAgent('echo', async (agent) => {
  const { brief_key, env } = await agent.checkin();
  let brief: unknown = null;
  if (brief_key) {
    const text = (await agent.readObject(brief_key)).toString('utf8');
    try {
      brief = JSON.parse(text);
    } catch {
      brief = text;
    }
  }
  say('echo', `brief ${brief_key ?? '(none)'} read`);
  await agent.progress(50, 'brief read');

  const resultKey = agent.resultKey('result.json');
  const result = { task_id: agent.taskId, brief_key: brief_key ?? null, brief, env_keys: Object.keys(env).sort() };
  await agent.writeObject(resultKey, JSON.stringify(result), 'application/json');
  await agent.progress(100, 'result written');

  await agent.checkback({ status: 'completed', result_key: resultKey, result_metadata: { echoed: brief !== null } });
  say('echo', `completed with ${resultKey}`);
});
