import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { SerialLoop } from '../../shared/loop/serial-loop';
import { RuntimeRegistry } from '../runtime/runtime-registry';
import { TaskSignals } from '../tasks/task-signals';
import { TasksRepository } from '../tasks/tasks.repository';
import { LostReplica, ReplicasRepository } from './replicas.repository';

/** At most this many lost replicas are handled per round; the next round takes the rest. */
const LOST_PER_ROUND = 10;

/**
 * Every replica writes its heartbeat to the database each DISPATCHER_REPLICA_HEARTBEAT_SECONDS.
 * A replica silent for DISPATCHER_REPLICA_LOST_SECONDS is lost: the agents it started on
 * its own host (process or local engine) cannot be watched or stopped by anyone else, so
 * one surviving replica ends those tasks as `failed`, naming it. Kubernetes Jobs are left
 * alone: any replica follows them. A replica restarted within the window keeps its tasks.
 */
@Injectable()
export class ReplicaHeartbeatService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Replicas');
  private readonly loop = new SerialLoop(() => this.round(), (error) => this.logger.warn({ err: error }, 'Replica heartbeat round failed'));
  private timer?: NodeJS.Timeout;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectDataSource() private readonly db: DataSource,
    private readonly replicas: ReplicasRepository,
    private readonly tasks: TasksRepository,
    private readonly runtimes: RuntimeRegistry,
    private readonly signals: TaskSignals,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    // Written before the first agent starts: a restart within the window keeps this replica's tasks.
    await this.replicas.heartbeat(this.config.dispatcherInstance, this.hostLocalBackends(), true);
    this.timer = setInterval(() => this.loop.kick(), this.config.dispatcherReplicaHeartbeatSeconds * 1000);
    this.loop.kick();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.loop.stop();
  }

  private hostLocalBackends(): string[] {
    return this.runtimes.backends.filter((backend) => backend.hostLocal).map((backend) => backend.name);
  }

  private async round(): Promise<void> {
    await this.replicas.heartbeat(this.config.dispatcherInstance, this.hostLocalBackends(), false);
    for (let handled = 0; handled < LOST_PER_ROUND; handled += 1) {
      if (!(await this.endTasksOfOneLostReplica())) return;
    }
  }

  /** In one transaction: claims a lost replica, fails its host-local tasks (each with its callback row), forgets it. */
  private async endTasksOfOneLostReplica(): Promise<boolean> {
    const ended = await this.db.transaction(async (manager) => {
      const lost = await this.replicas.claimLost(manager, this.config.dispatcherInstance, this.config.dispatcherReplicaLostSeconds);
      if (!lost) return null;
      const failed: string[] = [];
      for (const taskId of await this.replicas.hostLocalTasksOf(manager, lost)) {
        // Its output is on the lost host: nothing more will be stored, so its callback need not wait for it.
        const task = await this.tasks.transition(taskId, 'failed', { exitCode: -1, errorMessage: lostMessage(lost), logsStoredAt: new Date() }, manager);
        if (task) failed.push(taskId);
      }
      await this.replicas.forget(manager, lost.instance);
      return { lost, failed };
    });
    if (!ended) return false;
    this.logger.warn({ replica: ended.lost.instance, lastSeen: ended.lost.lastSeen, failedTasks: ended.failed }, 'A dispatcher replica went silent; its host-local tasks are failed');
    if (ended.failed.length > 0) this.signals.taskFinished();
    return true;
  }
}

function lostMessage(lost: LostReplica): string {
  return `The dispatcher replica "${lost.instance}" that ran this agent on its host stopped answering (last heartbeat ${lost.lastSeen.toISOString()}); the agent's fate is unknown.`;
}
