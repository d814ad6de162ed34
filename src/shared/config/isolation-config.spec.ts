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
    });
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
