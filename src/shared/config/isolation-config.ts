import { EGRESS_MODES, EgressMode, RUNTIME_CLASS_NAME } from '../task-protocol/isolation';

/** The settings a reader of the environment offers (config.ts's Reader). */
interface SettingsReader {
  problems: string[];
  raw(name: string): string | undefined;
  int(name: string, fallback: number, min: number, max: number): number;
  bool(name: string, fallback: boolean): boolean;
  oneOf<T extends string>(name: string, fallback: T, allowed: readonly T[]): T;
  stringMap(name: string): Record<string, string>;
}

/** The dispatcher's defaults for the isolation of agents (a task's own fields win). */
export interface AgentIsolationDefaults {
  runtimeClass: string | null;
  egress: EgressMode;
  runAsNonRoot: boolean;
  /** null: the image's user. */
  runAsUser: number | null;
  readOnlyRootFilesystem: boolean;
  /** Labels of the dispatcher's pods, which `dispatcher` egress lets agents reach. */
  dispatcherPodLabels: Record<string, string>;
  /** Their namespace; empty: KUBE_NAMESPACE. */
  dispatcherNamespace: string;
  /** The docker engine's limit on processes in one agent container. */
  pidsLimit: number;
}

export function readIsolationDefaults(r: SettingsReader): AgentIsolationDefaults {
  const runtimeClass = r.raw('AGENT_RUNTIME_CLASS') ?? null;
  if (runtimeClass !== null && !RUNTIME_CLASS_NAME.test(runtimeClass)) {
    r.problems.push(`AGENT_RUNTIME_CLASS must be a RuntimeClass name (got "${runtimeClass}")`);
  }
  const user = r.raw('AGENT_RUN_AS_USER');
  return {
    runtimeClass,
    egress: r.oneOf<EgressMode>('AGENT_EGRESS', 'dispatcher', EGRESS_MODES),
    runAsNonRoot: r.bool('AGENT_RUN_AS_NON_ROOT', true),
    runAsUser: user === 'image' ? null : r.int('AGENT_RUN_AS_USER', 65532, 0, 2147483647),
    readOnlyRootFilesystem: r.bool('AGENT_READ_ONLY_ROOT_FILESYSTEM', true),
    dispatcherPodLabels: r.stringMap('AGENT_DISPATCHER_POD_LABELS'),
    dispatcherNamespace: r.raw('AGENT_DISPATCHER_NAMESPACE') ?? '',
    pidsLimit: r.int('AGENT_PIDS_LIMIT', 1024, 16, 1_000_000),
  };
}
