import ipaddr from 'ipaddr.js';
import picomatch from 'picomatch';
import type { AgentFloor } from '../../shared/config/floor-config';
import { EGRESS_MODES, TaskNetwork, TaskSecurity } from '../../shared/task-protocol/isolation';
import { parseQuantity } from '../../shared/validation/quantities';
import { PRIVATE_IPV4, PRIVATE_IPV6 } from '../runtime/kubernetes-network-policy';

/** What of a task request the floor looks at. */
export interface FloorRequest {
  agent_image: string;
  resources: { cpu: string; memory: string };
  runtime_class?: string;
  network?: TaskNetwork;
  security?: TaskSecurity;
}

/** The dispatcher defaults the floor is read against. */
export interface FloorDefaults {
  runtimeClass: string | null;
  /** AGENT_EGRESS_DENY_CIDRS, denied on top of the built-in ranges. */
  denyCidrs: string[];
  /** AGENT_READ_ONLY_ROOT_FILESYSTEM: an operator who made the root writable for every agent has allowed it. */
  readOnlyRootFilesystem: boolean;
}

type Problems = Record<string, string[]>;

/**
 * What a task asks beyond the operator's floor, by field; each message names the setting
 * that refuses it, so the 400 tells the caller whom to ask. Every backend gets the same check.
 */
export function floorProblems(request: FloorRequest, floor: AgentFloor, defaults: FloorDefaults): Problems {
  const problems: Problems = {};
  const add = (field: string, message: string) => (problems[field] ??= []).push(message);
  const runtimeClass = runtimeClassProblem(request.runtime_class, floor, defaults.runtimeClass);
  if (runtimeClass) add('runtime_class', runtimeClass);
  const egress = request.network?.egress;
  if (egress && EGRESS_MODES.indexOf(egress) > EGRESS_MODES.indexOf(floor.egressMax)) {
    add('network.egress', `must be no wider than ${floor.egressMax} (AGENT_EGRESS_MAX)`);
  }
  (request.network?.allow ?? []).forEach((entry, index) => {
    const problem = cidrProblem(entry.cidr, floor.allowCidrs, defaults.denyCidrs);
    if (problem) add(`network.allow[${index}].cidr`, problem);
  });
  if (!floor.allowRoot && (request.security?.run_as_non_root === false || request.security?.run_as_user === 0)) {
    add('security', 'may not run the agent as root (AGENT_ALLOW_ROOT is false)');
  }
  if (request.security?.read_only_root_filesystem === false && defaults.readOnlyRootFilesystem && !floor.allowWritableRootFilesystem) {
    add('security.read_only_root_filesystem', 'may not make the root filesystem writable (AGENT_ALLOW_WRITABLE_ROOT_FILESYSTEM is false)');
  }
  const image = imageProblem(request.agent_image, floor);
  if (image) add('agent_image', image);
  for (const [field, ceiling, setting] of [['cpu', floor.maxCpu, 'AGENT_MAX_CPU'], ['memory', floor.maxMemory, 'AGENT_MAX_MEMORY']] as const) {
    const asked = parseQuantity(request.resources[field]);
    if (ceiling && asked !== null && asked > parseQuantity(ceiling)!) add(`resources.${field}`, `must be at most ${ceiling} (${setting})`);
  }
  return problems;
}

/** A class is allowed when listed (and, with a default, listed no later than it: as strong or stronger). */
function runtimeClassProblem(asked: string | undefined, floor: AgentFloor, fallback: string | null): string | undefined {
  if (asked === undefined || asked === fallback) return undefined;
  const allowed = floor.runtimeClasses;
  if (allowed.length === 0) return fallback ? `must be ${fallback}, the default no task may replace (AGENT_RUNTIME_CLASS; AGENT_RUNTIME_CLASSES lists no other)` : undefined;
  const at = allowed.indexOf(asked);
  if (at < 0) return `must be one of ${allowed.join(', ')} (AGENT_RUNTIME_CLASSES)`;
  if (fallback && at > allowed.indexOf(fallback)) return `may not be weaker than the default ${fallback}: AGENT_RUNTIME_CLASSES lists it after (AGENT_RUNTIME_CLASSES)`;
  return undefined;
}

function cidrProblem(cidr: string, allowCidrs: string[], denyCidrs: string[]): string | undefined {
  let block: [ipaddr.IPv4 | ipaddr.IPv6, number];
  try {
    block = ipaddr.parseCIDR(cidr);
  } catch {
    return 'must be a CIDR block';
  }
  if (allowCidrs.length > 0) {
    return allowCidrs.some((outer) => contains(ipaddr.parseCIDR(outer), block)) ? undefined : `must lie within ${allowCidrs.join(', ')} (AGENT_ALLOW_CIDRS)`;
  }
  const denied = [...PRIVATE_IPV4, ...PRIVATE_IPV6, ...denyCidrs].find((range) => overlaps(ipaddr.parseCIDR(range), block));
  return denied ? `may not open ${denied}: link-local, cluster and private ranges need the operator's AGENT_ALLOW_CIDRS (AGENT_ALLOW_CIDRS)` : undefined;
}

function imageProblem(image: string, floor: AgentFloor): string | undefined {
  if (floor.imagePatterns.length > 0 && !floor.imagePatterns.some((pattern) => picomatch.isMatch(image.replace(/@sha256:[0-9a-f]{64}$/, ''), pattern, { dot: true }))) {
    return `must match one of ${floor.imagePatterns.join(', ')} (AGENT_IMAGE_PATTERNS)`;
  }
  if (floor.imageDigestRequired && !/@sha256:[0-9a-f]{64}$/.test(image)) return 'must be pinned by digest, name@sha256:<64 hex> (AGENT_IMAGE_DIGEST_REQUIRED)';
  return undefined;
}

type Block = [ipaddr.IPv4 | ipaddr.IPv6, number];

function contains(outer: Block, inner: Block): boolean {
  return outer[0].kind() === inner[0].kind() && inner[1] >= outer[1] && inner[0].match(outer as never);
}

function overlaps(a: Block, b: Block): boolean {
  return contains(a, b) || contains(b, a);
}
