import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { readPodTemplate } from './kubernetes-settings';

function read(value: string): { template: unknown; problems: string[] } {
  const problems: string[] = [];
  return { template: readPodTemplate(value, problems), problems };
}

describe('KUBE_POD_TEMPLATE', () => {
  it('takes inline JSON or a YAML file with the allowed parts', () => {
    const template = {
      metadata: { labels: { team: 'agents' } },
      spec: { nodeSelector: { pool: 'agents' }, containers: [{ name: 'agent', resources: { limits: { 'ephemeral-storage': '2Gi' } } }] },
    };
    expect(read(JSON.stringify(template))).toEqual({ template, problems: [] });
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'pod-template-')), 'template.yaml');
    fs.writeFileSync(file, 'spec:\n  priorityClassName: batch\n');
    expect(read(file)).toEqual({ template: { spec: { priorityClassName: 'batch' } }, problems: [] });
  });

  it('names the first wrong part of a template and what it wants', () => {
    const cases: [unknown, string][] = [
      [{ spec: 'pod' }, 'KUBE_POD_TEMPLATE spec must be an object'],
      [{ spec: {}, kind: 'Pod' }, 'KUBE_POD_TEMPLATE may not set "kind" (allowed: metadata, spec)'],
      [{ metadata: [] }, 'KUBE_POD_TEMPLATE metadata must be an object'],
      [{ metadata: { labels: { team: 1 } } }, 'KUBE_POD_TEMPLATE metadata.labels.team must be a string'],
      [{ spec: { hostNetwork: true } }, 'KUBE_POD_TEMPLATE spec may not set "hostNetwork" (allowed: imagePullSecrets, nodeSelector, tolerations, affinity, priorityClassName, serviceAccountName, topologySpreadConstraints, schedulerName, dnsPolicy, dnsConfig, hostAliases, containers)'],
      [{ spec: { containers: { name: 'agent' } } }, 'KUBE_POD_TEMPLATE spec.containers must be a list of {name: "agent", resources} (extra resources such as ephemeral-storage)'],
      [{ spec: { containers: [{ name: 'sidecar' }] } }, 'KUBE_POD_TEMPLATE spec.containers.0.name must be "agent"'],
      [{ spec: { containers: [{ name: 'agent', image: 'x' }] } }, 'KUBE_POD_TEMPLATE spec.containers.0 may not set "image" (allowed: name, resources)'],
    ];
    for (const [template, problem] of cases) expect(read(JSON.stringify(template))).toEqual({ template: null, problems: [problem] });
  });

  it('refuses a file that is not a template, or no file at all', () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'pod-template-')), 'list.yaml');
    fs.writeFileSync(file, '- spec\n');
    expect(read(file)).toEqual({ template: null, problems: ['KUBE_POD_TEMPLATE must be an object with "metadata" and/or "spec"'] });
    const { template, problems } = read('/nonexistent/template.yaml');
    expect(template).toBeNull();
    expect(problems[0]).toMatch(/^KUBE_POD_TEMPLATE must be a JSON object or the path of a JSON or YAML file \(.*ENOENT/);
  });
});
