/**
 * The fields the dispatcher may write into its manifests. kubernetes-models' schema
 * accepts unknown fields (the API server drops them silently, or rejects them with
 * strict field validation), so a misspelt `activeDeadlineSecond` would pass it; this
 * catches it.
 */
type Shape = { [field: string]: Shape | Shape[] | 'value' | 'map' };

const OWNER_REFERENCE: Shape = { apiVersion: 'value', kind: 'value', name: 'value', uid: 'value', controller: 'value', blockOwnerDeletion: 'value' };
const METADATA: Shape = {
  name: 'value', generateName: 'value', namespace: 'value', labels: 'map', annotations: 'map', ownerReferences: [OWNER_REFERENCE],
};
const ENV_VAR: Shape = {
  name: 'value',
  value: 'value',
  valueFrom: { secretKeyRef: { name: 'value', key: 'value', optional: 'value' } },
};
const CONTAINER: Shape = {
  name: 'value',
  image: 'value',
  imagePullPolicy: 'value',
  command: 'value',
  args: 'value',
  env: [ENV_VAR],
  resources: { requests: 'map', limits: 'map' },
  ports: [{ name: 'value', containerPort: 'value', protocol: 'value' }],
  securityContext: {
    allowPrivilegeEscalation: 'value', privileged: 'value', readOnlyRootFilesystem: 'value', runAsNonRoot: 'value', runAsUser: 'value',
    capabilities: { drop: 'value', add: 'value' },
  },
  volumeMounts: [{ name: 'value', mountPath: 'value', readOnly: 'value' }],
};
const TOLERATION: Shape = { key: 'value', operator: 'value', value: 'value', effect: 'value', tolerationSeconds: 'value' };
const POD_SPEC: Shape = {
  imagePullSecrets: [{ name: 'value' }],
  nodeSelector: 'map',
  tolerations: [TOLERATION],
  // Validated by the Kubernetes schema; too deep to list here.
  affinity: 'value',
  topologySpreadConstraints: 'value',
  dnsConfig: 'value',
  hostAliases: 'value',
  priorityClassName: 'value',
  schedulerName: 'value',
  dnsPolicy: 'value',
  restartPolicy: 'value',
  automountServiceAccountToken: 'value',
  enableServiceLinks: 'value',
  terminationGracePeriodSeconds: 'value',
  serviceAccountName: 'value',
  containers: [CONTAINER],
  securityContext: { runAsNonRoot: 'value', runAsUser: 'value', runAsGroup: 'value', fsGroup: 'value', seccompProfile: { type: 'value' } },
  runtimeClassName: 'value',
  volumes: [{ name: 'value', emptyDir: { medium: 'value', sizeLimit: 'value' } }],
};
const SELECTOR: Shape = { matchLabels: 'map' };
const PEER: Shape = { podSelector: SELECTOR, namespaceSelector: SELECTOR, ipBlock: { cidr: 'value', except: 'value' } };
type Kind = 'Job' | 'Secret' | 'NetworkPolicy';
const SHAPES: Record<Kind, Shape> = {
  Job: {
    apiVersion: 'value',
    kind: 'value',
    metadata: METADATA,
    spec: {
      backoffLimit: 'value', suspend: 'value',
      completions: 'value',
      parallelism: 'value',
      activeDeadlineSeconds: 'value',
      ttlSecondsAfterFinished: 'value',
      podFailurePolicy: {
        rules: [{ action: 'value', onExitCodes: { containerName: 'value', operator: 'value', values: 'value' }, onPodConditions: [{ type: 'value', status: 'value' }] }],
      },
      template: { metadata: METADATA, spec: POD_SPEC },
    },
  },
  Secret: { apiVersion: 'value', kind: 'value', metadata: METADATA, type: 'value', data: 'map', stringData: 'map', immutable: 'value' },
  NetworkPolicy: {
    apiVersion: 'value',
    kind: 'value',
    metadata: METADATA,
    spec: { podSelector: SELECTOR, policyTypes: 'value', egress: [{ to: [PEER], ports: [{ protocol: 'value', port: 'value' }] }] },
  },
};

/** Paths of fields that are not part of the manifest's known shape (`spec.template.spec.containers[0].imag`). */
export function checkKnownFields(kind: Kind, manifest: unknown): string[] {
  return walk(SHAPES[kind], manifest, '').map((path) => `unknown field "${path}"`);
}

function walk(shape: Shape, value: unknown, path: string): string[] {
  if (value === undefined || value === null || typeof value !== 'object' || Array.isArray(value)) return [];
  return Object.entries(value as Record<string, unknown>).flatMap(([field, child]) => {
    const at = path ? `${path}.${field}` : field;
    const expected = shape[field];
    if (expected === undefined) return [at];
    if (expected === 'value' || expected === 'map') return [];
    if (Array.isArray(expected)) {
      return Array.isArray(child) ? child.flatMap((item, index) => walk(expected[0], item, `${at}[${index}]`)) : [];
    }
    return walk(expected, child, at);
  });
}
