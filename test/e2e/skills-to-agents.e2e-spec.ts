import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { AgentClient, SkillIntegrityError } from '@agent-task/agent-sdk';
import { perTaskAgentKey } from '../../src/dispatcher/auth/agent-keys';
import { createObjectStorage } from '../../src/shared/storage/storage.module';
import { http } from '../harness/http';
import { LintVersions, runWorkflowTask, sha256, uploadLintVersions } from '../harness/skill-agents';
import { startTestSystem, TestSystem } from '../harness/system';
import { waitFor } from '../harness/wait';
import { skillPackage } from '../harness/zip-builder';

/**
 * Skills reach the agent (CONTRACT section 4): a workflow naming `lint@2` runs the echo agent
 * on the process engine, which receives exactly version 2 and verifies it by hash; the
 * dispatcher serves only the packages pinned on the task; a tampered package is refused.
 */
describe('skills pinned on a task reach its agent', () => {
  const forgeSecret = randomBytes(16).toString('hex');
  let system: TestSystem;
  let lint: LintVersions;
  let work: string;

  beforeAll(async () => {
    system = await startTestSystem({ env: { FORGE_WEBHOOK_SECRET: forgeSecret } });
    lint = await uploadLintVersions(system);
    work = mkdtempSync(path.join(tmpdir(), 'skills-e2e-'));
  });
  afterAll(async () => {
    await system?.close();
    rmSync(work, { recursive: true, force: true });
  });

  const agentFor = (taskId: string) => new AgentClient({ taskId, dispatcherUrl: system.dispatcherUrl, agentKey: perTaskAgentKey(system.agentKey, taskId), retries: 0 });
  const pinned = (bytes: Buffer, version: number) => ({ slug: lint.slug, version_number: version, content_hash: sha256(bytes), storage_ref: `skills/sha256/${sha256(bytes)}.zip` });

  it('gives the echo agent exactly lint@2, verified by its hash', async () => {
    const task = await runWorkflowTask(system, forgeSecret, { skills: [`${lint.slug}@2`] });
    const expected = { slug: lint.slug, version_number: 2, content_hash: sha256(lint.v2), name: 'lint' };
    expect(task.body).toMatchObject({ status: 'completed', skills: [pinned(lint.v2, 2)], result: { result_metadata: { skills: [expected] } } });

    const onDispatcher = await http('GET', `${system.dispatcherUrl}/tasks/${task.body.guid}`, { headers: { 'x-api-key': system.apiKey } });
    expect(onDispatcher.body.data.skills).toEqual([pinned(lint.v2, 2)]);
    const logs = await http('GET', `${system.dispatcherUrl}/tasks/${task.body.guid}/logs`, { headers: { 'x-api-key': system.apiKey } });
    expect(logs.text).toContain(`skills installed: ${lint.slug}@2`);
  }, 120_000);

  it('serves the agent its pinned package and refuses any other', async () => {
    const task = await runWorkflowTask(system, forgeSecret, { skills: [`${lint.slug}@2`] });
    const agent = agentFor(task.body.guid);
    expect(sha256(await agent.readObject(pinned(lint.v2, 2).storage_ref))).toBe(sha256(lint.v2));
    await expect(agent.readObject(pinned(lint.v1, 1).storage_ref)).rejects.toMatchObject({ status: 403, code: 'permission_denied' });
    // Without X-Task-Id the key alone says which task reads the package.
    const bare = await fetch(`${system.dispatcherUrl}/agent/objects/${pinned(lint.v2, 2).storage_ref}`, { headers: { 'x-agent-key': perTaskAgentKey(system.agentKey, task.body.guid) } });
    expect(bare.status).toBe(200);
    expect(sha256(Buffer.from(await bare.arrayBuffer()))).toBe(sha256(lint.v2));
    // Nor may the agent of a task without skills.
    const other = await dispatcherTask([]);
    await expect(agentFor(other).readObject(pinned(lint.v2, 2).storage_ref)).rejects.toMatchObject({ status: 403, code: 'permission_denied' });
  }, 120_000);

  it('installs the skills announced at check-in into <dir>/<slug> with their front matter', async () => {
    const taskId = await dispatcherTask([pinned(lint.v2, 2)]);
    await waitRunnable(taskId);
    const [installed] = await agentFor(taskId).installSkills(path.join(work, 'installed'));
    expect(installed).toMatchObject({ ...pinned(lint.v2, 2), dir: path.join(work, 'installed', lint.slug), manifest: { name: 'lint', description: 'The second lint rules.' } });
    expect(readFileSync(path.join(installed.dir, 'scripts/run.sh'), 'utf8')).toContain('echo v2');
  }, 60_000);

  it('refuses a package whose bytes are not the pinned ones, and unpacks nothing of it', async () => {
    // The object under v2's key is replaced: what the agent downloads no longer has the pinned hash.
    const storage = createObjectStorage(system.config);
    const forged = skillPackage({ name: 'lint', extra: 'rm -rf /' });
    const ref = pinned(lint.v2, 2);
    await storage.put(ref.storage_ref, forged, { contentType: 'application/zip' });
    try {
      const taskId = await dispatcherTask([ref]);
      const attempt = agentFor(taskId).installSkills(path.join(work, 'tampered'), { skills: [ref] });
      await expect(attempt).rejects.toThrow(SkillIntegrityError);
      await expect(agentFor(taskId).installSkills(path.join(work, 'tampered'), { skills: [ref] })).rejects.toThrow(`has SHA-256 ${sha256(forged)}, not the pinned ${ref.content_hash}`);
      expect(() => readFileSync(path.join(work, 'tampered', lint.slug, 'SKILL.md'))).toThrow();
    } finally {
      await storage.put(ref.storage_ref, lint.v2, { contentType: 'application/zip' });
    }
  }, 60_000);

  /** A task straight on the dispatcher with these skills, run by the sleep agent so it stays open. */
  async function dispatcherTask(skills: ReturnType<typeof pinned>[]): Promise<string> {
    const taskId = randomUUID();
    const answer = await http('POST', `${system.dispatcherUrl}/tasks`, {
      headers: { 'x-api-key': system.apiKey },
      json: {
        task_id: taskId, agent_image: 'agent-examples/sleep', runtime_target: { type: 'local', namespace: '' }, env: { SLEEP_SECONDS: '30' },
        callback_url: 'http://127.0.0.1:9/callback', callback_token: 'token', timeout_seconds: 60, ...(skills.length ? { skills } : {}),
      },
    });
    expect(answer.status).toBe(201);
    expect(answer.body.data.skills).toEqual(skills);
    return taskId;
  }

  async function waitRunnable(taskId: string): Promise<void> {
    await waitFor(async () => {
      const answer = await http('GET', `${system.dispatcherUrl}/tasks/${taskId}`, { headers: { 'x-api-key': system.apiKey } });
      return ['starting', 'running'].includes(answer.body.data.status) || undefined;
    }, 30_000, 'the agent to start');
  }
});
