import { Inject, Injectable } from '@nestjs/common';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { DomainError } from '../../shared/errors/domain-error';
import { validateBody } from '../../shared/errors/validation';
import { HotRequest, HotRoute } from '../../shared/http/hot-routes';
import { AGENT_KEY_CHALLENGE } from '../auth/agent-key.strategy';
import { CheckbackDto, CheckinDto, ProgressDto } from './agent.dto';
import { AgentService } from './agent.service';

/**
 * Check-in, progress and check-back on the hot lane (see `serveHotRoutesFirst`): an agent's
 * life is these few requests, and on the Nest routes Express's and Nest's per-request set-up
 * cost more than the work. The same steps in the same order as `AgentController` behind
 * `AgentAuth`: the body parsed, `X-Agent-Key` required (401), the DTO validated, then the same
 * service call. When the agent API is held to AGENT_PORT, the main port's `/agent/*` stays
 * with Express, which refuses it there.
 */
@Injectable()
export class AgentHotRoutes {
  constructor(
    private readonly agent: AgentService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  routes(): HotRoute[] {
    if (this.config.agentPort !== null && !this.config.agentApiOnMainPort) return [];
    return [
      this.route('checkin', CheckinDto, async (key, dto) => ({ ok: true, data: await this.agent.checkin(key, dto.task_id) })),
      this.route('progress', ProgressDto, async (key, dto) => {
        await this.agent.progress(key, dto);
        return { ok: true };
      }),
      this.route('checkback', CheckbackDto, async (key, dto) => {
        await this.agent.checkback(key, dto);
        return { ok: true };
      }),
    ];
  }

  private route<T extends object>(name: string, dto: new () => T, run: (key: string, body: T) => Promise<unknown>): HotRoute {
    return {
      path: `/agent/${name}`,
      handle: async (request: HotRequest) => {
        const key = agentKeyOf(request);
        const body = await validateBody(dto, request.body);
        return { status: 200, body: await run(key, body) };
      },
    };
  }
}

/** `X-Agent-Key` as `AgentKeyStrategy` reads it (Express's `request.header`). */
function agentKeyOf(request: HotRequest): string {
  const key = request.headers['x-agent-key'];
  if (!key) throw new DomainError('not_authenticated', 'X-Agent-Key header is required.', { headers: AGENT_KEY_CHALLENGE });
  return Array.isArray(key) ? key.join(', ') : key;
}
