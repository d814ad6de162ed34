import { randomBytes } from 'node:crypto';
import { http, HttpAnswer } from './http';
import { sha256, skillsApi } from './skills';
import { TestSystem } from './system';
import { waitFor } from './wait';
import { makeWorkflow, pushPayload, sendWebhook, signedWebhook } from './webhooks';
import { skillPackage } from './zip-builder';

export interface LintVersions {
  slug: string;
  v1: Buffer;
  v2: Buffer;
}

/** A skill `lint` (or `lint-<suffix>`) with two uploaded versions of different content. */
export async function uploadLintVersions(system: TestSystem, name = 'lint'): Promise<LintVersions> {
  const skills = skillsApi(system);
  const slug = await skills.makeSkill({ name });
  const v1 = skillPackage({ name, description: 'The first lint rules.', extra: 'v1' });
  const v2 = skillPackage({ name, description: 'The second lint rules.', extra: 'v2' });
  for (const [bytes, number] of [[v1, 1], [v2, 2]] as const) {
    const answer = await skills.upload(slug, bytes);
    if (answer.status !== 201 || answer.body.version_number !== number) throw new Error(`upload of ${slug} v${number}: ${answer.status} ${answer.text}`);
  }
  return { slug, v1, v2 };
}

/**
 * Creates a workflow whose template names `skills` (and `template` fields over the default),
 * sends it a signed push, and answers the routed task once it is final.
 */
export async function runWorkflowTask(system: TestSystem, forgeSecret: string, template: Record<string, unknown>): Promise<HttpAnswer> {
  const headers = { authorization: `Token ${system.apiToken}` };
  const id = `skills-${randomBytes(4).toString('hex')}`;
  const repository = `acme/${id}`;
  const workflow = makeWorkflow(id, {}, { filter: { 'repository.full_name': repository } });
  Object.assign(workflow.task_template as Record<string, unknown>, template);
  const created = await http('POST', `${system.controllerUrl}/api/v1/workflows/`, { json: workflow, headers });
  if (created.status !== 201) throw new Error(`workflow not created: ${created.status} ${created.text}`);
  const routed = await sendWebhook(system.controllerUrl, await signedWebhook('forge', pushPayload(repository), { secret: forgeSecret }));
  if (routed.status !== 200 || !routed.body.task_guid) throw new Error(`webhook not routed: ${routed.status} ${routed.text}`);
  return waitFor(async () => {
    const answer = await http('GET', `${system.controllerUrl}/api/v1/tasks/${routed.body.task_guid}/`, { headers });
    return ['completed', 'failed', 'timed_out', 'cancelled'].includes(answer.body.status) ? answer : undefined;
  }, 90_000, 'the workflow task to finish');
}

export { sha256 };
