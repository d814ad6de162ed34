import { Inject, Injectable, Logger } from '@nestjs/common';
import { RUNTIME_BACKENDS, RuntimeBackend } from './runtime';

/** The enabled backends by name, and the stop-then-free sequence every final task goes through. */
@Injectable()
export class RuntimeRegistry {
  private readonly logger = new Logger('Runtime');
  private readonly byName: Map<string, RuntimeBackend>;

  constructor(@Inject(RUNTIME_BACKENDS) readonly backends: RuntimeBackend[]) {
    this.byName = new Map(backends.map((backend) => [backend.name, backend]));
  }

  names(): string[] {
    return [...this.byName.keys()];
  }

  get(name: string | null): RuntimeBackend | undefined {
    return name ? this.byName.get(name) : undefined;
  }

  /** Stops the agent (SIGTERM, later SIGKILL) and frees what it left; never throws. */
  async stopAndRemove(task: { taskId: string; runtimeBackend: string | null; runtimeRef: string | null }): Promise<void> {
    const backend = this.get(task.runtimeBackend);
    if (!backend || !task.runtimeRef) return;
    try {
      await backend.stop(task.taskId, task.runtimeRef);
      await backend.remove(task.taskId, task.runtimeRef);
    } catch (error) {
      this.logger.warn({ taskId: task.taskId, err: error }, 'Could not stop or remove the agent');
    }
  }
}
