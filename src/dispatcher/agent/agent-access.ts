import { Inject, Injectable } from '@nestjs/common';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { DomainError } from '../../shared/errors/domain-error';
import { AGENT_KEY_CHALLENGE } from '../auth/agent-auth';
import { DERIVED_KEY, derivedKeyMatches, perTaskAgentKey, secretsEqual } from '../auth/agent-keys';

/**
 * Which tasks an `X-Agent-Key` opens: its own task for a per-task key, any task for the
 * dispatcher's AGENT_KEY (unless AGENT_KEY_PER_TASK_ONLY).
 */
@Injectable()
export class AgentAccess {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  /** The task's own key first: what agents send on every call, one HMAC to derive it and a compare. */
  opens(key: string, taskId: string): boolean {
    if (derivedKeyMatches(key, perTaskAgentKey(this.config.agentKey, taskId))) return true;
    return !this.config.agentKeyPerTaskOnly && secretsEqual(key, this.config.agentKey);
  }

  /** 403 for a key of another task (or the global key where refused), 401 for one that is no key at all. */
  assert(key: string, taskId: string): void {
    if (this.opens(key, taskId)) return;
    if (secretsEqual(key, this.config.agentKey)) {
      throw new DomainError('permission_denied', 'The dispatcher-wide agent key is refused here (AGENT_KEY_PER_TASK_ONLY); use the per-task key.');
    }
    if (DERIVED_KEY.test(key)) throw new DomainError('permission_denied', `X-Agent-Key does not belong to task ${taskId}.`);
    throw new DomainError('authentication_failed', 'X-Agent-Key is not valid.', { headers: AGENT_KEY_CHALLENGE });
  }
}
