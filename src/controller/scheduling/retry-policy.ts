/**
 * Which endings of an attempt are tried again, how often, and after how long (CONTRACT
 * section 5 "Scheduling"). Pure: the retry service applies what these functions decide.
 */
export const RETRY_REASONS = ['infra', 'timed_out', 'failed'] as const;
export type RetryReason = (typeof RETRY_REASONS)[number];

export interface RetryPolicy {
  max_attempts: number;
  backoff_seconds: number;
  max_backoff_seconds: number;
  on: RetryReason[];
}

/** What is not the agent's fault is tried again, up to three attempts in all. */
export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({ max_attempts: 3, backoff_seconds: 10, max_backoff_seconds: 600, on: ['infra'] as RetryReason[] });

/** A stored policy (null: none given) with every field filled. */
export function policyOf(stored: Partial<RetryPolicy> | null | undefined): RetryPolicy {
  return {
    max_attempts: stored?.max_attempts ?? DEFAULT_RETRY_POLICY.max_attempts,
    backoff_seconds: stored?.backoff_seconds ?? DEFAULT_RETRY_POLICY.backoff_seconds,
    max_backoff_seconds: stored?.max_backoff_seconds ?? DEFAULT_RETRY_POLICY.max_backoff_seconds,
    on: stored?.on ? [...new Set(stored.on)] : [...DEFAULT_RETRY_POLICY.on],
  };
}

/** How an attempt ended, as far as the controller can tell. */
export interface AttemptEnding {
  status: 'failed' | 'timed_out';
  /** `callback`: the dispatcher reported it; `refused`: every dispatcher refused the request; `watchdog`: no callback came. */
  source: 'callback' | 'refused' | 'watchdog';
  errorMessage?: string | null;
}

/**
 * What the dispatcher says when the agent never checked in: its start failed (the runtime
 * refused it, an image could not be pulled, a pod stayed unschedulable past its grace), the
 * agent vanished from the runtime, the replica that ran it died, or Kubernetes evicted it
 * past the Job's backoff. These are the dispatcher's own messages (src/dispatcher/scheduler,
 * src/dispatcher/replicas), not the agent's.
 */
const INFRA_MESSAGES = [
  /^The agent could not (be )?start/,
  /^The agent is gone from the runtime/,
  /^The dispatcher replica ".*" that ran this agent on its host stopped answering/,
  /without checking back \((Evicted|BackoffLimitExceeded)\b/,
];

/**
 * The one place an ending is classified: `infra` when the agent never got to run (every
 * dispatcher refused the request, or the dispatcher's message says so), `timed_out` (the
 * dispatcher's time-out, or the watchdog's: past the deadline no word came, and the controller
 * cannot tell a dead dispatcher from an agent that overran), else `failed` (the agent's own failure).
 */
export function classifyEnding(ending: AttemptEnding): RetryReason {
  if (ending.source === 'refused') return 'infra';
  if (ending.source === 'watchdog') return 'timed_out';
  const message = ending.errorMessage ?? '';
  if (INFRA_MESSAGES.some((pattern) => pattern.test(message))) return 'infra';
  return ending.status;
}

/** The longest wait after attempt `ended` (1-based): the base doubled per attempt, capped. */
export function backoffCeilingSeconds(policy: RetryPolicy, ended: number): number {
  return Math.min(policy.max_backoff_seconds, policy.backoff_seconds * 2 ** Math.max(0, ended - 1));
}

/** Exponential backoff with full jitter: anywhere between 0 and the ceiling, so retries spread out. */
export function backoffSeconds(policy: RetryPolicy, ended: number, random: () => number = Math.random): number {
  return random() * backoffCeilingSeconds(policy, ended);
}

export type RetryDecision = { retry: true; reason: RetryReason; delaySeconds: number } | { retry: false; reason: RetryReason };

/**
 * Attempt `attempt` ended for `reason`: tried again when the policy retries that reason and
 * an attempt is left, never for a task someone asked to cancel.
 */
export function decideRetry(policy: RetryPolicy, attempt: number, reason: RetryReason, cancelRequested: boolean, random?: () => number): RetryDecision {
  if (cancelRequested || !policy.on.includes(reason) || attempt >= policy.max_attempts) return { retry: false, reason };
  return { retry: true, reason, delaySeconds: backoffSeconds(policy, attempt, random) };
}
