import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from 'js-yaml';

export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

/**
 * The rules of the chart's dispatcher Role (helm/templates/dispatcher-rbac.yaml), read from the
 * template itself: its `rules:` block holds no template expression, so it is plain YAML.
 */
export function chartDispatcherRules(root = join(__dirname, '..', '..')): PolicyRule[] {
  const template = readFileSync(join(root, 'helm/templates/dispatcher-rbac.yaml'), 'utf8');
  const block = /\nrules:\n([\s\S]*?)\n---/.exec(template);
  if (!block) throw new Error('helm/templates/dispatcher-rbac.yaml has no rules block');
  return (load(`rules:\n${block[1]}`) as { rules: PolicyRule[] }).rules;
}

/** Whether RBAC lets `verb` on `resource` (with its subresource: `pods/log`) in `group`, as the API server's authorizer decides. */
export function allows(rules: PolicyRule[], verb: string, group: string, resource: string): boolean {
  return rules.some((rule) => (rule.apiGroups.includes(group) || rule.apiGroups.includes('*'))
    && (rule.resources.includes(resource) || rule.resources.includes('*'))
    && (rule.verbs.includes(verb) || rule.verbs.includes('*')));
}

/** The verb the API server's authorizer sees for a request. */
export function verbOf(method: string, named: boolean, watch: boolean): string {
  if (method === 'POST') return 'create';
  if (method === 'DELETE') return named ? 'delete' : 'deletecollection';
  if (method === 'PATCH') return 'patch';
  if (method === 'PUT') return 'update';
  if (watch) return 'watch';
  return named ? 'get' : 'list';
}
