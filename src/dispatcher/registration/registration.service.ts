import { setTimeout as delay } from 'node:timers/promises';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { RuntimeRegistry } from '../runtime/runtime-registry';
import { TaskSignals } from '../tasks/task-signals';
import { TasksRepository } from '../tasks/tasks.repository';
import { PoolsRepository } from '../pools/pools.repository';
import { ControllerClient, ControllerError, controllerTargetOf } from './controller-client';

const MAX_BACKOFF_SECONDS = 60;

/**
 * Checks in with the controller at boot and heartbeats every interval. A 404 on a
 * heartbeat (the controller forgot us) means check in again; any failure is retried
 * with backoff and never stops the dispatcher.
 */
@Injectable()
export class RegistrationService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Registration');
  private readonly stopping = new AbortController();
  private loop?: Promise<void>;
  private dispatcherGuid: string | null = null;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly tasks: TasksRepository,
    private readonly runtimes: RuntimeRegistry,
    private readonly signals: TaskSignals,
    private readonly poolAgents: PoolsRepository,
  ) {}

  onApplicationBootstrap(): void {
    const target = controllerTargetOf(this.config);
    if (!target) {
      this.logger.log('No CONTROLLER_URL with a credential: not registering with a controller');
      return;
    }
    this.loop = this.run(new ControllerClient(target), target.url);
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopping.abort();
    await this.loop;
  }

  private async run(client: ControllerClient, controllerUrl: string): Promise<void> {
    let failures = 0;
    while (!this.stopping.signal.aborted) {
      try {
        if (this.dispatcherGuid) await this.heartbeat(client);
        else await this.checkin(client, controllerUrl);
        // Answered again after failures: the callbacks that failed meanwhile need not wait out their backoff.
        if (failures > 0) this.signals.controllerBack.next();
        failures = 0;
        await this.sleep(this.config.heartbeatIntervalSeconds);
      } catch (error) {
        if (error instanceof ControllerError && error.status === 404 && this.dispatcherGuid) {
          this.logger.warn({ dispatcherGuid: this.dispatcherGuid }, 'The controller does not know this dispatcher; checking in again');
          this.dispatcherGuid = null;
          continue;
        }
        failures += 1;
        const wait = Math.min(MAX_BACKOFF_SECONDS, 2 ** Math.min(failures - 1, 6));
        this.logger.warn({ controllerUrl, error: error instanceof Error ? error.message : String(error), retryInSeconds: wait }, 'Controller registration failed');
        await this.sleep(wait);
      }
    }
  }

  private async checkin(client: ControllerClient, controllerUrl: string): Promise<void> {
    const answer = await client.post<{ dispatcher_guid: string; dispatcher_slug?: string; action?: string }>('/api/v1/dispatchers/checkin/', {
      name: this.config.role === 'all' ? 'local' : this.config.dispatcherName,
      endpoint_url: this.config.dispatcherPublicUrl,
      cloud: this.config.dispatcherCloud,
      backends: this.runtimes.names(),
      labels: this.config.dispatcherLabels,
      heartbeat_interval_seconds: this.config.heartbeatIntervalSeconds,
      api_key: this.config.apiKey,
    });
    this.dispatcherGuid = answer.dispatcher_guid;
    this.logger.log({ controllerUrl, dispatcherGuid: answer.dispatcher_guid, slug: answer.dispatcher_slug, action: answer.action }, 'Checked in with the controller');
  }

  private async heartbeat(client: ControllerClient): Promise<void> {
    await client.post('/api/v1/dispatchers/heartbeat/', {
      dispatcher_guid: this.dispatcherGuid,
      active_tasks: await this.tasks.countActive(),
      capacity: this.config.maxConcurrentTasks,
      ...(this.config.warmPools.length > 0 ? { warm_pools: await this.warmPools() } : {}),
    });
  }

  /** Each warm pool's state for the controller's console (sent only by a dispatcher that has pools). */
  private async warmPools(): Promise<{ name: string; backend: string; image: string; size: number; idle: number; claimed: number }[]> {
    const counts = await this.poolAgents.counts();
    return this.config.warmPools.map((pool) => {
      const count = counts.find((row) => row.pool === pool.name);
      return { name: pool.name, backend: pool.backend, image: pool.image, size: pool.size, idle: count?.idle ?? 0, claimed: count?.claimed ?? 0 };
    });
  }

  private async sleep(seconds: number): Promise<void> {
    await delay(seconds * 1000, undefined, { signal: this.stopping.signal }).catch(() => undefined);
  }
}
