import { createHmac } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { DomainError } from '../../shared/errors/domain-error';
import { assertObjectKey } from '../../shared/storage/object-storage';
import { podAdditionsOf } from '../../shared/task-protocol/pod-additions';
import { traceColumns } from '../../shared/tracing/trace-context';
import { parseSecretRef, SecretEnv, secretAllowed, secretEnvOf } from '../../shared/task-protocol/secret-env';
import { DEFAULT_TASK_RESOURCES, DEFAULT_TASK_TIMEOUT_SECONDS } from '../../shared/task-protocol/task-request';
import { deriveKey } from '../auth/agent-keys';
import { CallbackTokenBox } from './callback-token-box';
import { RuntimeRegistry } from '../runtime/runtime-registry';
import { TaskLogs } from './task-logs';
import { TaskSignals } from './task-signals';
import { taskView, TaskView } from './task-view';
import { TaskEntity } from './task.entity';
import { CreateTaskDto, ListTasksQuery } from './tasks.dto';
import { TasksRepository } from './tasks.repository';
import { isolationOf } from './task-isolation';
import { floorProblems } from '../floor/agent-floor';


/** The task API's rules: creation (idempotent on task_id), reads, cancel and logs. */
@Injectable()
export class TasksService {
  private readonly logger = new Logger('Tasks');
  private readonly digestKey: Buffer;
  private readonly secretAllowlist: string[];

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly tasks: TasksRepository,
    private readonly runtimes: RuntimeRegistry,
    private readonly signals: TaskSignals,
    private readonly tokens: CallbackTokenBox,
    private readonly taskLogs: TaskLogs,
  ) {
    this.digestKey = deriveKey(config.agentKey, 'request-digest');
    this.secretAllowlist = config.agentSecretAllowlist;
  }

  /**
   * 201 with a new task, or the existing one when the same body comes again (created false).
   * A new task costs one statement: the insert gives the row back, and a task that was not
   * there before has no callback yet.
   */
  async create(dto: CreateTaskDto): Promise<{ created: boolean; task: TaskView }> {
    const request = this.normalise(dto);
    this.validateForRuntime(request);
    const digest = createHmac('sha256', this.digestKey).update(canonicalJson(request)).digest('hex');
    const stored = await this.store({
      taskId: request.task_id,
      agentImage: request.agent_image,
      runtimeType: request.runtime_target.type,
      runtimeNamespace: request.runtime_target.namespace,
      resources: request.resources,
      env: request.env,
      ports: request.ports,
      briefKey: request.brief_key,
      callbackUrl: request.callback_url,
      callbackTokenSealed: this.tokens.seal(request.callback_token),
      timeoutSeconds: request.timeout_seconds,
      skills: request.skills ?? [],
      runtimeClass: request.runtime_class ?? null,
      network: request.network ?? null,
      security: request.security ?? null,
      podAdditions: podAdditionsOf(request),
      secretEnv: request.secret_env ?? {},
      requestDigest: digest,
      ...traceColumns(),
      status: 'pending',
    });
    const { created, claimed } = stored;
    if (created) this.logger.log({ taskId: created.taskId, image: created.agentImage, runtime: created.runtimeType }, 'Task accepted');
    // The tasks the insert's claim took (this one, or older ones a slot freed for) start now.
    if (claimed.length > 0) this.signals.claimedHere(claimed);
    if (created) {
      // When the claim ran with the insert, a start round would find nothing more to start.
      if (!stored.claimedWithInsert) this.signals.taskStored();
      return { created: true, task: taskView(created) };
    }
    // The insert met a committed row, and the dispatcher never deletes a task.
    const existing = (await this.tasks.findById(request.task_id))!;
    if (existing.requestDigest !== digest) {
      throw DomainError.conflict(`Task ${request.task_id} exists with a different request.`, { task_id: request.task_id });
    }
    return { created: false, task: await this.view(existing) };
  }

  /**
   * Inserts the task, and claims with the insert what capacity allows while this process
   * starts tasks (`TaskSignals.startsHere`): the scheduler then starts the claimed ones at
   * once. `claimedWithInsert`: the claim ran, so no start round is needed for this task.
   */
  private async store(task: Partial<TaskEntity>): Promise<{ created: TaskEntity | null; claimed: TaskEntity[]; claimedWithInsert: boolean }> {
    if (!this.signals.startsHere) return { created: await this.tasks.insertIfAbsent(task), claimed: [], claimedWithInsert: false };
    const { created, claimed } = await this.tasks.insertAndClaim(task, this.config.maxConcurrentTasks, this.config.dispatcherInstance);
    return { created, claimed, claimedWithInsert: true };
  }

  async get(taskId: string): Promise<TaskView> {
    return this.view(await this.find(taskId));
  }

  async list(query: ListTasksQuery): Promise<{ tasks: TaskView[]; total: number }> {
    const [tasks, total] = await this.tasks.list({ limit: query.limit ?? 50, offset: query.offset ?? 0, status: query.status });
    const callbacks = await this.tasks.callbacksOf(tasks.map((task) => task.taskId));
    return { tasks: tasks.map((task) => taskView(task, callbacks.get(task.taskId))), total };
  }

  /** Cancels a live task (409 once final) and stops its agent in the background. */
  async cancel(taskId: string): Promise<TaskView> {
    const cancelled = await this.tasks.transition(taskId, 'cancelled', { exitCode: -1, errorMessage: 'cancelled' });
    if (!cancelled) {
      const task = await this.find(taskId);
      throw DomainError.conflict(`Task ${taskId} is already ${task.status}.`, { status: task.status });
    }
    this.logger.log({ taskId }, 'Task cancelled');
    this.signals.taskFinished();
    void this.runtimes.stopAndRemove(cancelled);
    return this.view(cancelled);
  }

  async logs(taskId: string, tail?: number): Promise<string> {
    return this.taskLogs.read(await this.find(taskId), tail);
  }

  /** The output and what is added to it until the task is final (404 for an unknown task, before any byte). */
  async followLogs(taskId: string, tail: number | undefined, signal: AbortSignal): Promise<AsyncGenerator<string>> {
    const task = await this.find(taskId);
    return this.taskLogs.follow(task, tail, () => this.tasks.findById(task.taskId), signal);
  }

  private async find(taskId: string): Promise<TaskEntity> {
    const task = /^[0-9a-f-]{36}$/i.test(taskId) ? await this.tasks.findById(taskId.toLowerCase()) : null;
    if (!task) throw DomainError.notFound(`Task ${taskId}`);
    return task;
  }

  private async view(task: TaskEntity): Promise<TaskView> {
    const callbacks = await this.tasks.callbacksOf([task.taskId]);
    return taskView(task, callbacks.get(task.taskId));
  }

  private normalise(dto: CreateTaskDto) {
    return {
      task_id: dto.task_id.toLowerCase(),
      agent_image: dto.agent_image,
      runtime_target: { type: dto.runtime_target.type, namespace: dto.runtime_target.namespace ?? '' },
      resources: dto.resources ? { cpu: dto.resources.cpu, memory: dto.resources.memory } : { ...DEFAULT_TASK_RESOURCES },
      env: dto.env ?? {},
      ports: (dto.ports ?? []).map((port) => ({ container_port: port.container_port, protocol: port.protocol ?? 'tcp' })),
      brief_key: dto.brief_key ?? '',
      callback_url: dto.callback_url,
      callback_token: dto.callback_token,
      timeout_seconds: dto.timeout_seconds ?? DEFAULT_TASK_TIMEOUT_SECONDS,
      // Sent only when set, so a seed request digests as it always did.
      ...isolationOf(dto),
      ...podAdditionsOf(dto),
      ...(secretEnvOf(dto) ? { secret_env: secretEnvOf(dto) } : {}),
    };
  }

  /** An enabled backend that says it can run this image (an unmapped image is refused here, not later). */
  private validateForRuntime(request: ReturnType<TasksService['normalise']>): void {
    const backend = this.runtimes.get(request.runtime_target.type);
    if (!backend) {
      throw DomainError.invalid({ 'runtime_target.type': [`must be one of the enabled backends: ${this.runtimes.names().join(', ') || '(none)'}`] });
    }
    if (request.brief_key) {
      try {
        assertObjectKey(request.brief_key);
      } catch {
        throw DomainError.invalid({ brief_key: ['must be a relative object key with no "." or ".." parts'] });
      }
    }
    const problems = {
      ...floorProblems(request, this.config.agentFloor, this.floorDefaults()),
      ...backend.validate({ image: request.agent_image, namespace: request.runtime_target.namespace, pod: podAdditionsOf(request) }),
    };
    Object.assign(problems, this.secretEnvProblems(request.secret_env ?? {}, request.env));
    if (Object.keys(problems).length > 0) throw DomainError.invalid(problems);
  }

  private floorDefaults() {
    const { runtimeClass, egressDenyCidrs, readOnlyRootFilesystem } = this.config.agentIsolation;
    return { runtimeClass, denyCidrs: egressDenyCidrs, readOnlyRootFilesystem };
  }

  /** References outside AGENT_SECRET_ALLOWLIST, and names the task's `env` sets too. */
  private secretEnvProblems(secretEnv: SecretEnv, env: Record<string, string>): Record<string, string[]> {
    const problems: Record<string, string[]> = {};
    for (const [name, reference] of Object.entries(secretEnv)) {
      const ref = parseSecretRef(reference);
      if (!ref) problems[`secret_env.${name}`] = ['must be a "<secret>/<key>" reference'];
      else if (!secretAllowed(ref.secret, this.secretAllowlist)) {
        problems[`secret_env.${name}`] = [`the secret "${ref.secret}" is not in this dispatcher's AGENT_SECRET_ALLOWLIST`];
      } else if (name in env) problems[`secret_env.${name}`] = ['is also set in env; a variable comes from one of them'];
    }
    return problems;
  }
}

/** JSON with object keys sorted, so equal requests digest equally whatever their key order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
