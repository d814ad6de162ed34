import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { runAgent, say } from './run-agent';

/**
 * Reads the brief, installs the task's skills (verified by hash), reports progress, writes
 * `result.json` echoing the brief and listing the skills, completes.
 */
runAgent('echo', async (agent) => {
  const { brief_key, env, skills: pinned } = await agent.checkin();
  const skillsDir = await mkdtemp(path.join(tmpdir(), 'skills-'));
  const installed = await agent.installSkills(skillsDir, { skills: pinned });
  const skills = installed.map(({ slug, version_number, content_hash, manifest }) => ({ slug, version_number, content_hash, name: manifest?.name ?? null }));
  say('echo', `skills installed: ${skills.map((skill) => `${skill.slug}@${skill.version_number}`).join(', ') || '(none)'}`);
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
  const result = { task_id: agent.taskId, brief_key: brief_key ?? null, brief, env_keys: Object.keys(env).sort(), skills };
  await agent.writeObject(resultKey, JSON.stringify(result), 'application/json');
  await agent.progress(100, 'result written');

  await agent.checkback({ status: 'completed', result_key: resultKey, result_metadata: { echoed: brief !== null, ...(skills.length > 0 ? { skills } : {}) } });
  // On the process engine the folder is on the dispatcher's host: leave nothing behind.
  await rm(skillsDir, { recursive: true, force: true });
  say('echo', `completed with ${resultKey}`);
});
