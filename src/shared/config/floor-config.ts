import { z } from 'zod';
import { EGRESS_MODES, EgressMode, RUNTIME_CLASS_NAME } from '../task-protocol/isolation';
import { isQuantity } from '../validation/quantities';
import { commaList, Reader } from './env-reader';
import { cidrList } from './isolation-config';

/**
 * The operator's floor: what no task may ask beyond, whatever backend runs it (checked at
 * POST /tasks, src/dispatcher/floor/agent-floor.ts), and the limits every agent pod gets.
 */
export interface AgentFloor {
  /** AGENT_RUNTIME_CLASSES: classes a task may name, strongest first; with AGENT_RUNTIME_CLASS set, only it and those before it. Empty: any when there is no default, else the default alone. */
  runtimeClasses: string[];
  /** AGENT_EGRESS_MAX: the widest egress a task may ask. */
  egressMax: EgressMode;
  /** AGENT_ALLOW_CIDRS: where a task's `allow` entries may point. Empty: anywhere outside the denied ranges. */
  allowCidrs: string[];
  /** AGENT_ALLOW_ROOT: whether a task may run its agent as root. */
  allowRoot: boolean;
  /** AGENT_ALLOW_WRITABLE_ROOT_FILESYSTEM: whether a task may ask a writable root filesystem. */
  allowWritableRootFilesystem: boolean;
  /** AGENT_IMAGE_PATTERNS: globs an agent image must match (`*` stops at `/`, `**` does not). Empty: any. */
  imagePatterns: string[];
  /** AGENT_IMAGE_DIGEST_REQUIRED: images must be pinned by digest (`@sha256:...`). */
  imageDigestRequired: boolean;
  /** AGENT_MAX_CPU, AGENT_MAX_MEMORY: per-task ceilings (Kubernetes quantities); null: none. */
  maxCpu: string | null;
  maxMemory: string | null;
  /** AGENT_EPHEMERAL_STORAGE_LIMIT: every agent container's ephemeral-storage request and limit. */
  ephemeralStorage: string;
  /** AGENT_EMPTYDIR_SIZE_LIMIT: sizeLimit of each emptyDir an agent pod gets (/tmp, /workspace). */
  emptyDirSizeLimit: string;
  /** AGENT_MAX_EVICTION_REPLACEMENTS: pods a task's Job may replace after evictions before the task fails. */
  maxEvictionReplacements: number;
  /** AGENT_PROGRESS_DATA_MAX_BYTES: the largest progress `data` (as JSON) an agent may report. */
  progressDataMaxBytes: number;
}

const quantity = z.string().refine(isQuantity);

export function readAgentFloor(r: Reader, defaults: { runtimeClass: string | null; egress: EgressMode }): AgentFloor {
  const floor: AgentFloor = {
    runtimeClasses: r.parse('AGENT_RUNTIME_CLASSES', [], commaList.pipe(z.array(z.string().regex(RUNTIME_CLASS_NAME))), 'a comma-separated list of RuntimeClass names'),
    egressMax: r.oneOf<EgressMode>('AGENT_EGRESS_MAX', 'open', EGRESS_MODES),
    allowCidrs: r.parse('AGENT_ALLOW_CIDRS', [], cidrList, 'a comma-separated list of CIDR blocks'),
    allowRoot: r.bool('AGENT_ALLOW_ROOT', false),
    allowWritableRootFilesystem: r.bool('AGENT_ALLOW_WRITABLE_ROOT_FILESYSTEM', false),
    imagePatterns: r.parse('AGENT_IMAGE_PATTERNS', [], commaList, 'a comma-separated list of image patterns'),
    imageDigestRequired: r.bool('AGENT_IMAGE_DIGEST_REQUIRED', false),
    maxCpu: r.parse<string | null>('AGENT_MAX_CPU', null, quantity, 'a Kubernetes quantity (2, 500m)'),
    maxMemory: r.parse<string | null>('AGENT_MAX_MEMORY', null, quantity, 'a Kubernetes quantity (4Gi)'),
    ephemeralStorage: r.parse('AGENT_EPHEMERAL_STORAGE_LIMIT', '2Gi', quantity, 'a Kubernetes quantity (2Gi)'),
    emptyDirSizeLimit: r.parse('AGENT_EMPTYDIR_SIZE_LIMIT', '1Gi', quantity, 'a Kubernetes quantity (1Gi)'),
    maxEvictionReplacements: r.int('AGENT_MAX_EVICTION_REPLACEMENTS', 3, 0, 1000),
    progressDataMaxBytes: r.int('AGENT_PROGRESS_DATA_MAX_BYTES', 16 * 1024, 1, 1024 * 1024),
  };
  if (EGRESS_MODES.indexOf(defaults.egress) > EGRESS_MODES.indexOf(floor.egressMax)) {
    r.problems.push(`AGENT_EGRESS (${defaults.egress}) must be no wider than AGENT_EGRESS_MAX (${floor.egressMax})`);
  }
  if (defaults.runtimeClass && floor.runtimeClasses.length > 0 && !floor.runtimeClasses.includes(defaults.runtimeClass)) {
    r.problems.push(`AGENT_RUNTIME_CLASSES must list AGENT_RUNTIME_CLASS (${defaults.runtimeClass})`);
  }
  return floor;
}
