import { DEFAULT_AGENT_ISOLATION } from '../task-protocol/isolation';
import { ConfigError, loadConfig } from './config';

const secrets = { API_TOKEN: 't', SECRET_KEY: 's', CALLBACK_SIGNING_KEY: 'c', DISPATCHER_API_KEY: 'd', API_KEY: 'k', AGENT_KEY: 'a' };

describe('agent isolation settings', () => {
  it('default to hardened pods with dispatcher-only egress (the shared defaults)', () => {
    const { agentIsolation } = loadConfig(secrets);
    expect(agentIsolation).toEqual({
      runtimeClass: DEFAULT_AGENT_ISOLATION.runtimeClass,
      egress: DEFAULT_AGENT_ISOLATION.network.egress,
      runAsNonRoot: DEFAULT_AGENT_ISOLATION.security.runAsNonRoot,
      runAsUser: DEFAULT_AGENT_ISOLATION.security.runAsUser,
      readOnlyRootFilesystem: DEFAULT_AGENT_ISOLATION.security.readOnlyRootFilesystem,
      dispatcherPodLabels: {},
      dispatcherNamespace: '',
      pidsLimit: 1024,
      dns: { peers: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } }, podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } }], ports: [53] },
      egressDenyCidrs: [],
    });
  });

  it("read DNS peers, extra denied ranges and the operator's floor, naming each wrong variable", () => {
    const config = loadConfig({
      ...secrets, AGENT_DNS_PEERS: '[{"ipBlock":{"cidr":"169.254.20.10/32"}}]', AGENT_DNS_PORTS: '53,5353', AGENT_EGRESS_DENY_CIDRS: '203.0.113.0/24, 2001:db8:1::/48',
      AGENT_RUNTIME_CLASSES: 'kata,gvisor', AGENT_RUNTIME_CLASS: 'gvisor', AGENT_MAX_CPU: '2', AGENT_IMAGE_PATTERNS: 'registry.example/**',
    });
    expect(config.agentIsolation).toMatchObject({ dns: { peers: [{ ipBlock: { cidr: '169.254.20.10/32' } }], ports: [53, 5353] }, egressDenyCidrs: ['203.0.113.0/24', '2001:db8:1::/48'] });
    expect(config.agentFloor).toMatchObject({ runtimeClasses: ['kata', 'gvisor'], egressMax: 'open', allowRoot: false, allowWritableRootFilesystem: false, maxCpu: '2', imagePatterns: ['registry.example/**'], progressDataMaxBytes: 16384, maxEvictionReplacements: 3 });
    expect(loadConfig({ ...secrets, AGENT_ALLOW_WRITABLE_ROOT_FILESYSTEM: 'true', AGENT_MAX_EVICTION_REPLACEMENTS: '0' }).agentFloor).toMatchObject({ allowWritableRootFilesystem: true, maxEvictionReplacements: 0 });
    expect(() => loadConfig({ ...secrets, AGENT_EGRESS_DENY_CIDRS: '10.0.0.0/33', AGENT_EGRESS: 'open', AGENT_EGRESS_MAX: 'dispatcher', AGENT_DNS_PEERS: '[{"podSelector":{}}]' }))
      .toThrow(ConfigError);
    let problems: string[] = [];
    try {
      loadConfig({ ...secrets, AGENT_EGRESS_DENY_CIDRS: '10.0.0.0/33', AGENT_EGRESS: 'open', AGENT_EGRESS_MAX: 'dispatcher', AGENT_RUNTIME_CLASS: 'gvisor', AGENT_RUNTIME_CLASSES: 'kata' });
    } catch (error) {
      problems = (error as ConfigError).problems;
    }
    {
      expect(problems).toEqual(expect.arrayContaining([
        'AGENT_EGRESS_DENY_CIDRS must be a comma-separated list of CIDR blocks (got "10.0.0.0/33")',
        'AGENT_EGRESS (open) must be no wider than AGENT_EGRESS_MAX (dispatcher)',
        'AGENT_RUNTIME_CLASSES must list AGENT_RUNTIME_CLASS (gvisor)',
      ]));
    }
  });

  it('take the settings, "image" keeping the image user', () => {
    const { agentIsolation } = loadConfig({
      ...secrets, AGENT_RUNTIME_CLASS: 'gvisor', AGENT_EGRESS: 'none', AGENT_RUN_AS_NON_ROOT: 'false', AGENT_RUN_AS_USER: 'image',
      AGENT_READ_ONLY_ROOT_FILESYSTEM: 'no', AGENT_DISPATCHER_POD_LABELS: '{"app":"dispatcher"}', AGENT_PIDS_LIMIT: '64',
    });
    expect(agentIsolation).toMatchObject({ runtimeClass: 'gvisor', egress: 'none', runAsNonRoot: false, runAsUser: null, readOnlyRootFilesystem: false, dispatcherPodLabels: { app: 'dispatcher' }, pidsLimit: 64 });
  });

  it('name each wrong setting', () => {
    let problems: string[] = [];
    try {
      loadConfig({ ...secrets, AGENT_RUNTIME_CLASS: 'G Visor', AGENT_EGRESS: 'all', AGENT_RUN_AS_USER: '-1' });
    } catch (error) {
      problems = (error as ConfigError).problems;
    }
    expect(problems).toEqual([
      'AGENT_RUNTIME_CLASS must be a RuntimeClass name (got "G Visor")',
      'AGENT_EGRESS must be one of none, dispatcher, open (got "all")',
      'AGENT_RUN_AS_USER must be a whole number from 0 to 2147483647 (got "-1")',
    ]);
  });
});
