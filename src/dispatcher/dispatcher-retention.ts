import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { Inject, Injectable } from '@nestjs/common';
import { AppConfig } from '../shared/config/config';
import { APP_CONFIG } from '../shared/config/config.module';
import { RetentionSweep, RetentionTarget } from '../shared/retention/retention-sweep';
import { OBJECT_STORAGE, ObjectStorage } from '../shared/storage/object-storage';
import { agentLogDir } from './runtime/process-runtime';
import { TasksRepository } from './tasks/tasks.repository';

/**
 * TASK_RETENTION_DAYS on the dispatcher: final tasks whose callbacks are delivered (or
 * given up), with their outbox rows, result objects (`results/<task_id>/`) and stored logs
 * (`logs/<task_id>.txt`); and, on each replica, the process agents' log files it kept.
 */
@Injectable()
export class DispatcherRetention extends RetentionSweep {
  constructor(
    private readonly tasks: TasksRepository,
    @Inject(OBJECT_STORAGE) private readonly storage: ObjectStorage,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    super();
  }

  protected targets(): RetentionTarget[] {
    const days = this.config.taskRetentionDays;
    return [
      {
        name: 'final dispatcher tasks',
        days,
        sweep: (age, batch) =>
          this.tasks.deleteFinished(age, batch, async (taskIds) => {
            for (const taskId of taskIds) {
              await this.storage.deleteFolder(`results/${taskId}`);
              await this.storage.delete(`logs/${taskId}.txt`);
            }
          }),
      },
      { name: 'process agent log files', days, sweep: (age, batch) => this.removeOldLogFiles(age, batch) },
    ];
  }

  /** Log and exit files of this replica's process agents last written more than `days` ago. */
  private async removeOldLogFiles(days: number, batch: number): Promise<number> {
    const folder = agentLogDir(this.config.dataDir);
    const names = await fs.readdir(folder).catch(() => [] as string[]);
    const cutoff = Date.now() - days * 24 * 3600 * 1000;
    let removed = 0;
    for (const name of names.filter((entry) => entry.endsWith('.log') || entry.endsWith('.exit'))) {
      if (removed >= batch) break;
      const file = path.join(folder, name);
      const stats = await fs.stat(file).catch(() => null);
      if (stats && stats.mtimeMs < cutoff) {
        await fs.rm(file, { force: true });
        removed += 1;
      }
    }
    return removed;
  }
}
