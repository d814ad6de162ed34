import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { RUNTIME_BACKENDS, RuntimeBackend } from './runtime';
import { runtimeKeyOf, TaskEntity } from '../tasks/task.entity';
import { isFinal, TaskStatus } from '../tasks/task-state';
import { RecentKeys } from '../../shared/state/recent-keys';

/**
 * Runs between an agent's stop and its removal, while its output can still be read;
 * `knownFinal` when the caller's task row was final (a final task never moves again).
 */
export type BeforeRemove = (backend: RuntimeBackend, taskId: string, ref: string, runtimeKey: string, knownFinal: boolean) => Promise<void>;
/** Runs once an agent is stopped and removed, with its key in the runtime; `poolAgent` false when it was a task's own (cold) agent. */
export type AfterRemove = (runtimeKey: string, poolAgent: boolean) => Promise<void>;

/** Far more than the tasks that end within an agent's exit grace on one replica. */
const ENDED_KEPT = 10_000;

export interface AgentOfTask {
  taskId: string;
  runtimeBackend: string | null;
  runtimeRef: string | null;
  /** The replica that submitted it; absent for an agent this replica listed itself. */
  runtimeOwner?: string | null;
  /** A warm pool's agent: its id is the agent's key in the runtime (else the task id is). */
  poolAgentId?: string | null;
  /** The task's status as the caller read it, when it did: a final one spares the output store a read. */
  status?: TaskStatus;
}

/** The enabled backends by name, and the stop-then-free sequence every final task goes through. */
@Injectable()
export class RuntimeRegistry implements OnApplicationShutdown {
  private readonly logger = new Logger('Runtime');
  /** A failed stop is tried again after this, doubling up to `stopRetryMaxMs`, until the runtime confirms it. */
  stopRetryBaseMs = 1000;
  stopRetryMaxMs = 60_000;
  private closing = false;
  private readonly byName: Map<string, RuntimeBackend>;
  private readonly stopping = new Map<string, Promise<void>>();
  /**
   * Agents this process removed lately: the check-back's removal after its grace is skipped
   * for an agent already removed when it exited (each removal stores the output, asks the
   * runtime and writes the database again). Far more than a grace's worth of removals.
   */
  private readonly removed = new RecentKeys(10_000);
  /**
   * Tasks that ended here while their agents ran (a check-back), by the agent's key in its
   * runtime, until the agent is removed: the runtime's report of its exit then needs no read
   * of the task, whose row is final and so never changes again. Past ENDED_KEPT the report
   * reads the task, as another replica's does.
   */
  private readonly endedHere = new Map<string, TaskEntity>();
  private beforeRemove: BeforeRemove = async () => undefined;
  private afterRemove: AfterRemove = async () => undefined;

  constructor(
    @Inject(RUNTIME_BACKENDS) readonly backends: RuntimeBackend[],
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.byName = new Map(backends.map((backend) => [backend.name, backend]));
  }

  /** The task logs keep each agent's output here before its container, Job or process goes. */
  onBeforeRemove(hook: BeforeRemove): void {
    this.beforeRemove = hook;
  }

  /** The warm pools retire an agent of theirs here once it is removed. */
  onAfterRemove(hook: AfterRemove): void {
    this.afterRemove = hook;
  }

  names(): string[] {
    return [...this.byName.keys()];
  }

  get(name: string | null): RuntimeBackend | undefined {
    return name ? this.byName.get(name) : undefined;
  }

  /**
   * A task that ended here (a final row), its agent still to be removed. Only an agent this
   * replica removes is kept: its removal (at its exit, or after the grace) forgets it.
   */
  rememberEnded(task: TaskEntity): void {
    if (task.runtimeRef && this.reaches(task) && this.endedHere.size < ENDED_KEPT) this.endedHere.set(runtimeKeyOf(task), task);
  }

  /** The task of the agent under `runtimeKey`, when it ended here and the agent is not yet removed. */
  endedTask(runtimeKey: string): TaskEntity | undefined {
    return this.endedHere.get(runtimeKey);
  }

  /** True when this replica may act on the agent: any Job, but only its own host-local agents. */
  reaches(task: AgentOfTask): boolean {
    const backend = this.get(task.runtimeBackend);
    if (!backend) return false;
    return !backend.hostLocal || !task.runtimeOwner || task.runtimeOwner === this.config.dispatcherInstance;
  }

  /**
   * Stops the agent (SIGTERM, later SIGKILL) and frees what it left; never throws. Callers
   * asking for one agent at once (a cancel and the exit watcher, say) share one stop and
   * removal. Another replica's host-local agent is left to that replica, which stops it
   * when it sees the task final.
   */
  stopAndRemove(task: AgentOfTask): Promise<void> {
    const backend = this.get(task.runtimeBackend);
    if (!backend || !task.runtimeRef || !this.reaches(task)) return Promise.resolve();
    const key = `${backend.name}/${task.runtimeRef}`;
    let stopping = this.stopping.get(key);
    if (!stopping) {
      // A task entity says whether its agent is a pool's (a partial one, from a runtime's list, may not know).
      const poolAgent = task.poolAgentId !== null;
      const knownFinal = task.status !== undefined && isFinal(task.status);
      stopping = this.stopAndRemoveOnce(backend, task.taskId, runtimeKeyOf(task), task.runtimeRef, poolAgent, knownFinal).finally(() => this.stopping.delete(key));
      this.stopping.set(key, stopping);
    }
    return stopping;
  }

  /**
   * The same, unless this process already removed this agent of this final task: for the
   * removals that follow a task's end (its exit applied, the check-back's after its grace,
   * the stray sweep's), whichever comes first does the work. A final task's agent is never
   * started again, so the key cannot name a newer agent.
   */
  stopAndRemoveFinished(task: AgentOfTask): Promise<void> {
    if (task.runtimeBackend && task.runtimeRef && this.removed.has(removedKey(task.runtimeBackend, task.runtimeRef, task.taskId))) {
      // Removed before the check-back was remembered: the removal after the grace forgets it.
      this.endedHere.delete(runtimeKeyOf(task));
      return Promise.resolve();
    }
    return this.stopAndRemove(task);
  }

  onApplicationShutdown(): void {
    this.closing = true;
  }

  /**
   * A stop the runtime refuses (its API server down, a timeout) is tried again until it is
   * confirmed: a cancelled agent must not run on to its deadline. Should this process end
   * first, the next one's sweep of agents whose task is final stops it.
   */
  private async stopConfirmed(backend: RuntimeBackend, taskId: string, ref: string): Promise<boolean> {
    for (let attempt = 0; ; attempt += 1) {
      try {
        await backend.stop(taskId, ref);
        return true;
      } catch (error) {
        if (this.closing) return false;
        const delayMs = Math.min(this.stopRetryMaxMs, this.stopRetryBaseMs * 2 ** Math.min(attempt, 16));
        this.logger.warn({ taskId, err: error, retryInMs: delayMs }, 'Could not stop the agent; trying again');
        await new Promise((resolve) => setTimeout(resolve, delayMs).unref());
      }
    }
  }

  private async stopAndRemoveOnce(backend: RuntimeBackend, taskId: string, runtimeKey: string, ref: string, poolAgent: boolean, knownFinal: boolean): Promise<void> {
    try {
      if (!(await this.stopConfirmed(backend, runtimeKey, ref))) return;
      await this.beforeRemove(backend, taskId, ref, runtimeKey, knownFinal).catch((error: unknown) => this.logger.warn({ taskId, err: error }, 'Could not store the agent output'));
      await backend.remove(runtimeKey, ref);
      this.removed.add(removedKey(backend.name, ref, taskId));
      await this.afterRemove(runtimeKey, poolAgent).catch((error: unknown) => this.logger.warn({ taskId, err: error }, 'Could not record the agent removed'));
    } catch (error) {
      this.logger.warn({ taskId, err: error }, 'Could not stop or remove the agent');
    } finally {
      this.endedHere.delete(runtimeKey);
    }
  }
}

function removedKey(backend: string, ref: string, taskId: string): string {
  return `${backend}/${ref}/${taskId}`;
}
