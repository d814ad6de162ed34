import { Readable } from 'node:stream';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { DomainError } from '../../shared/errors/domain-error';
import { TaskSkill } from '../../shared/task-protocol/isolation';
import { assertObjectKey, OBJECT_STORAGE, ObjectStorage } from '../../shared/storage/object-storage';
import { ProgressForwarder } from '../callbacks/progress-forwarder';
import { taskCheckinLatency } from '../metrics/dispatcher-metrics';
import { RuntimeRegistry } from '../runtime/runtime-registry';
import { AGENT_EXIT_GRACE_MS, isFinal } from '../tasks/task-state';
import { TaskLogs } from '../tasks/task-logs';
import { TaskSignals } from '../tasks/task-signals';
import { TaskEntity } from '../tasks/task.entity';
import { TasksRepository } from '../tasks/tasks.repository';
import { AgentAccess } from './agent-access';
import { CheckbackDto, ProgressDto } from './agent.dto';

const RESULT_KEY = /^results\/([0-9a-f-]{36})\/./;
const SKILL_PACKAGE_KEY = /^skills\/sha256\/[0-9a-f]{64}\.zip$/;

function mayRead(task: TaskEntity, objectKey: string): boolean {
  if (task.briefKey && task.briefKey === objectKey) return true;
  return (task.skills ?? []).some((skill) => skill.storage_ref === objectKey);
}

/** The agent protocol: check-in, progress, check-back, and the brief/result objects. */
@Injectable()
export class AgentService {
  private readonly logger = new Logger('Agent');

  constructor(
    private readonly tasks: TasksRepository,
    private readonly access: AgentAccess,
    private readonly progressForwarder: ProgressForwarder,
    private readonly signals: TaskSignals,
    private readonly runtimes: RuntimeRegistry,
    @Inject(OBJECT_STORAGE) private readonly storage: ObjectStorage,
    private readonly taskLogs: TaskLogs,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /**
   * `starting` becomes `running`; a repeated check-in answers the same. The move is tried
   * first, so a first check-in costs one statement; the task is read only when it did not move.
   */
  async checkin(key: string, taskId: string): Promise<{ brief_key: string; env: Record<string, string>; skills: TaskSkill[] }> {
    const id = this.assertOpens(key, taskId);
    const moved = await this.tasks.checkIn(id);
    if (moved) {
      this.logger.log({ taskId: id }, 'Agent checked in');
      taskCheckinLatency.observe({ backend: moved.runtimeBackend ?? moved.runtimeType }, Math.max(0, (Date.now() - moved.createdAt.getTime()) / 1000));
    }
    const task = moved ?? (await this.findTask(id));
    if (isFinal(task.status)) throw DomainError.conflict(`Task ${id} is already ${task.status}.`, { status: task.status });
    if (task.status !== 'running') throw DomainError.conflict(`Task ${id} has not been started.`, { status: task.status });
    return { brief_key: task.briefKey, env: task.env, skills: task.skills ?? [] };
  }

  /** Progress `data` is copied into every event stream and the controller's task: it has a size limit. */
  async progress(key: string, dto: ProgressDto): Promise<void> {
    const limit = this.config.agentFloor.progressDataMaxBytes;
    if (dto.data && Buffer.byteLength(JSON.stringify(dto.data)) > limit) {
      throw DomainError.invalid({ data: [`must be at most ${limit} bytes as JSON (AGENT_PROGRESS_DATA_MAX_BYTES)`] });
    }
    // Like the check-in, the write is tried first and the task read only when it was not live.
    const id = this.assertOpens(key, dto.task_id);
    const progress = { percentage: dto.percentage, message: dto.message ?? '', data: dto.data ?? {} };
    const task = await this.tasks.recordProgress(id, progress);
    if (!task) {
      const current = await this.findTask(id);
      throw DomainError.conflict(`Task ${id} is ${current.status}; progress is no longer taken.`, { status: current.status });
    }
    this.progressForwarder.forward(task, progress);
  }

  /** The final word; like the check-in, the move is tried first and the task read only when it did not move. */
  async checkback(key: string, dto: CheckbackDto): Promise<void> {
    const id = this.assertOpens(key, dto.task_id);
    const checkedBack = await this.tasks.checkBack(id, dto.status, {
      exitCode: dto.status === 'completed' ? 0 : 1,
      resultKey: dto.result_key ?? null,
      resultMetadata: dto.result_metadata ?? {},
      errorMessage: dto.error || (dto.status === 'failed' ? 'The agent reported a failure.' : null),
    });
    if (!checkedBack) {
      const current = await this.findTask(id);
      if (current.status === dto.status && (current.resultKey ?? '') === (dto.result_key ?? '')) return;
      throw DomainError.conflict(`Task ${id} is ${current.status}; check-back ${dto.status} refused.`, { status: current.status });
    }
    // An agent recorded on this replica has its output stored (at its exit, or storeNow's) before its callback is due.
    const finished = checkedBack.task;
    this.runtimes.rememberEnded(finished);
    this.signals.taskFinished(finished.runtimeRef !== null && this.runtimes.reaches(finished), checkedBack.pendingWaits);
    this.logger.log({ taskId: id, status: dto.status }, 'Agent checked back');
    void this.taskLogs.storeNow(finished);
    setTimeout(() => void this.runtimes.stopAndRemoveFinished(finished), AGENT_EXIT_GRACE_MS).unref();
  }

  /** The task's brief and the skill packages pinned on it: the objects an agent may read. */
  async readObject(key: string, objectKey: string, taskIdHint?: string): Promise<{ body: Readable; size: number }> {
    this.assertKey(objectKey);
    const task = taskIdHint ? await this.openTask(key, taskIdHint) : await this.taskReading(key, objectKey);
    if (!mayRead(task, objectKey)) {
      throw new DomainError('permission_denied', `Agents may read only their task's brief (${task.briefKey || 'none'}) and its skill packages.`);
    }
    const object = await this.storage.open(objectKey);
    if (!object) throw DomainError.notFound(`Object ${objectKey}`);
    return object;
  }

  /** Writes a result object, only under `results/<task_id>/`. */
  async writeObject(key: string, objectKey: string, body: Buffer, contentType?: string, taskIdHint?: string): Promise<{ key: string; size: number }> {
    this.assertKey(objectKey);
    const taskId = taskIdHint ?? RESULT_KEY.exec(objectKey)?.[1];
    if (!taskId) throw new DomainError('permission_denied', 'Agents may write only under results/<task_id>/.');
    const task = await this.openTask(key, taskId);
    if (!objectKey.startsWith(`results/${task.taskId}/`)) {
      throw new DomainError('permission_denied', `Agents may write only under results/${task.taskId}/.`);
    }
    if (isFinal(task.status)) throw DomainError.conflict(`Task ${task.taskId} is already ${task.status}.`, { status: task.status });
    return this.storage.put(objectKey, body, { size: body.length, contentType });
  }

  /** Checks the key against the task, then finds it: 401/403 before 404. */
  private async openTask(key: string, taskId: string): Promise<TaskEntity> {
    return this.findTask(this.assertOpens(key, taskId));
  }

  /** The task id as stored, once the key is known to open it (401/403 before any 404). */
  private assertOpens(key: string, taskId: string): string {
    const id = taskId.toLowerCase();
    this.access.assert(key, id);
    return id;
  }

  private async findTask(id: string): Promise<TaskEntity> {
    const task = await this.tasks.findById(id);
    if (!task) throw DomainError.notFound(`Task ${id}`);
    return task;
  }

  /** Without a task id, the key itself says which tasks may read it (as a brief, or a pinned skill package). */
  private async taskReading(key: string, objectKey: string): Promise<TaskEntity> {
    const readers = SKILL_PACKAGE_KEY.test(objectKey) ? await this.tasks.withSkillPackage(objectKey) : await this.tasks.withBrief(objectKey);
    const task = readers.find((candidate) => this.access.opens(key, candidate.taskId));
    if (!task) throw new DomainError('permission_denied', `X-Agent-Key may not read ${objectKey}; agents read only their task's brief and skill packages.`);
    return task;
  }

  private assertKey(objectKey: string): void {
    try {
      assertObjectKey(objectKey);
    } catch {
      throw new DomainError('permission_denied', 'Object keys are relative paths; agents read their brief and write under results/<task_id>/.');
    }
  }
}
