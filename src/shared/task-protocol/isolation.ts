/**
 * The isolation fields of a task request (CONTRACT section 4, "Skills to agents, isolation"),
 * shared by the controller, which validates and forwards them, and the dispatcher, which
 * fills in its defaults and applies them in each runtime.
 */

/** A skill version pinned on a controller task, as the agent receives it at check-in. */
export interface TaskSkill {
  slug: string;
  version_number: number;
  content_hash: string;
  storage_ref: string;
}

/** `none`: no network; `dispatcher`: DNS and the dispatcher only; `open`: the public internet. */
export const EGRESS_MODES = ['none', 'dispatcher', 'open'] as const;
export type EgressMode = (typeof EGRESS_MODES)[number];

/** One more destination an agent may reach: a CIDR block, on the given TCP ports (none: every port). */
export interface EgressAllow {
  cidr: string;
  ports?: number[];
}

export interface TaskNetwork {
  egress?: EgressMode;
  allow?: EgressAllow[];
}

/** What a task may relax of the hardened pod and container (the rest is never relaxed). */
export interface TaskSecurity {
  run_as_non_root?: boolean;
  run_as_user?: number;
  read_only_root_filesystem?: boolean;
}

/** A task's isolation with every default filled in, as a runtime applies it. */
export interface AgentIsolation {
  runtimeClass: string | null;
  network: { egress: EgressMode; allow: { cidr: string; ports: number[] }[] };
  security: { runAsNonRoot: boolean; runAsUser: number | null; readOnlyRootFilesystem: boolean };
}

/** A Kubernetes RuntimeClass name (a DNS-1123 subdomain). */
export const RUNTIME_CLASS_NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
export const MAX_EGRESS_ALLOW = 32;
export const MAX_TASK_SKILLS = 100;

/** What an agent gets with no setting and no task field: hardened, DNS and the dispatcher only. */
export const DEFAULT_AGENT_ISOLATION: AgentIsolation = {
  runtimeClass: null,
  network: { egress: 'dispatcher', allow: [] },
  security: { runAsNonRoot: true, runAsUser: 65532, readOnlyRootFilesystem: true },
};
