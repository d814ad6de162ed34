import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { TaskDispatchService } from './task-dispatch.service';
import { Task } from './tasks.entity';

const PENDING_BATCH = 20;

/**
 * The controller's background loop: offers pending tasks to dispatchers again, and times out
 * tasks whose dispatcher never called back (the watchdog). Safe with several replicas: every
 * step is a conditional UPDATE.
 */
@Injectable()
export class TaskSweeper implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(TaskSweeper.name);
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | null = null;

  constructor(
    @InjectRepository(Task) private readonly tasks: Repository<Task>,
    private readonly dispatch: TaskDispatchService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.sweep(), this.config.taskDispatchRetrySeconds * 1000);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** One round; a round still running is not started twice. */
  sweep(): Promise<void> {
    this.running ??= this.round().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async round(): Promise<void> {
    try {
      await this.timeOutSilentTasks();
      for (const guid of await this.dispatch.duePending(PENDING_BATCH)) await this.dispatch.dispatch(guid);
    } catch (error) {
      this.logger.error({ err: error }, 'Task sweep failed');
    }
  }

  /** Tasks with no final callback a grace period after their deadline become `timed_out`. */
  async timeOutSilentTasks(): Promise<string[]> {
    const grace = this.config.taskWatchdogGraceSeconds;
    const result = await this.tasks
      .createQueryBuilder()
      .update()
      .set({
        status: 'timed_out',
        finishedAt: () => 'now()',
        errorMessage: `No callback came from the dispatcher within ${grace} s after the task's deadline.`,
      })
      .where(`status IN ('dispatched', 'running')`)
      .andWhere(`deadline_at + :grace * interval '1 second' < now()`, { grace })
      .returning(['guid'])
      .execute();
    const guids = (result.raw as { guid: string }[]).map((row) => row.guid);
    if (guids.length > 0) this.logger.warn({ tasks: guids }, 'Tasks timed out without a callback');
    return guids;
  }
}
