import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ConfigError, loadConfig } from './config';

const secrets = { API_TOKEN: 't', SECRET_KEY: 's', API_KEY: 'k', AGENT_KEY: 'a', ROLE: 'dispatcher' };

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig({ ...secrets, ...env });
    return [];
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
}

describe('Kubernetes settings', () => {
  it('has production defaults: own namespace only, 900 s pending grace, do-not-disrupt, no template', () => {
    expect(loadConfig({ ...secrets, KUBE_NAMESPACE: 'agents' }).kubernetes).toEqual({
      namespaces: ['agents'],
      pendingGraceSeconds: 900,
      apiOutageGraceSeconds: 120,
      apiTimeoutSeconds: 30,
      watchSilenceSeconds: 90,
      doNotDisrupt: true,
      jobBackoffLimit: 6,
      podTemplate: null,
      taskAdditions: { labelPrefixes: [], annotationPrefixes: [], nodeSelectorKeys: [], tolerationKeys: [], priorityClasses: [] },
    });
  });

  it('reads KUBE_NAMESPACES, always with KUBE_NAMESPACE, and the allow-lists for task additions', () => {
    const config = loadConfig({ ...secrets, KUBE_NAMESPACE: 'agents', KUBE_NAMESPACES: 'team-a, team-b', KUBE_TASK_LABEL_PREFIXES: 'team.example.com/,cost-center' });
    expect(config.kubernetes.namespaces).toEqual(['agents', 'team-a', 'team-b']);
    expect(config.kubernetes.taskAdditions.labelPrefixes).toEqual(['team.example.com/', 'cost-center']);
  });

  it('takes KUBE_POD_TEMPLATE as inline JSON or as a YAML file', () => {
    const inline = loadConfig({ ...secrets, KUBE_POD_TEMPLATE: '{"spec":{"imagePullSecrets":[{"name":"regcred"}]}}' });
    expect(inline.kubernetes.podTemplate).toEqual({ spec: { imagePullSecrets: [{ name: 'regcred' }] } });
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'template-')), 'pod.yaml');
    fs.writeFileSync(file, 'metadata:\n  labels:\n    team: ml\nspec:\n  serviceAccountName: agents\n  nodeSelector:\n    pool: agents\n');
    expect(loadConfig({ ...secrets, KUBE_POD_TEMPLATE: file }).kubernetes.podTemplate).toEqual({
      metadata: { labels: { team: 'ml' } }, spec: { serviceAccountName: 'agents', nodeSelector: { pool: 'agents' } },
    });
  });

  it('refuses a pod template it cannot read or that sets what the dispatcher owns, naming the setting', () => {
    expect(problemsOf({ KUBE_POD_TEMPLATE: '{"spec":' })).toEqual([expect.stringMatching(/^KUBE_POD_TEMPLATE must be a JSON object or the path of a JSON or YAML file/)]);
    expect(problemsOf({ KUBE_POD_TEMPLATE: '/nowhere/pod.yaml' })).toEqual([expect.stringContaining('ENOENT')]);
    expect(problemsOf({ KUBE_POD_TEMPLATE: '{"spec":{"restartPolicy":"Always"}}' })).toEqual([expect.stringMatching(/^KUBE_POD_TEMPLATE spec may not set "restartPolicy"/)]);
    expect(problemsOf({ KUBE_POD_TEMPLATE: '{"spec":{"containers":[{"name":"agent","image":"x"}]}}' })).toEqual(['KUBE_POD_TEMPLATE spec.containers.0 may not set "image" (allowed: name, resources)']);
    expect(problemsOf({ PENDING_GRACE_SECONDS: '0' })).toEqual(['PENDING_GRACE_SECONDS must be a whole number from 1 to 604800 (got "0")']);
    expect(problemsOf({ KUBE_API_TIMEOUT_SECONDS: '0' })).toEqual(['KUBE_API_TIMEOUT_SECONDS must be a whole number from 1 to 300 (got "0")']);
    expect(problemsOf({ KUBE_API_TIMEOUT_SECONDS: '301' })).toEqual(['KUBE_API_TIMEOUT_SECONDS must be a whole number from 1 to 300 (got "301")']);
  });
});
