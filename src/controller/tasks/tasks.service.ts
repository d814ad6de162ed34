import { podAdditionsOf } from '../../shared/task-protocol/pod-additions';
import { secretEnvOf } from '../../shared/task-protocol/secret-env';
import { randomUUID } from 'node:crypto';
import { SpanKind } from '@opentelemetry/api';
import { inSpan, traceColumns } from '../../shared/tracing/trace-context';
import { queueAttributes, TASK_QUEUE, taskAttributes } from '../../shared/tracing/task-attributes';
import { Inject, Injectable } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { isUUID, validate } from 'class-validator';
import { KeysetPage } from '../../shared/database/keyset-page';
import { DomainError } from '../../shared/errors/domain-error';
import { fieldErrors } from '../../shared/errors/validation';
import { hideReservedKeys, restoreReservedKeys } from '../../shared/validation/reserved-keys';
import { OBJECT_STORAGE, ObjectStorage, readAll } from '../../shared/storage/object-storage';
import { DEFAULT_TASK_RESOURCES, DEFAULT_TASK_TIMEOUT_SECONDS } from '../../shared/task-protocol/task-request';
import { fairnessGroupOf, postedConcurrency, StoredConcurrency, TaskConcurrency } from '../scheduling/concurrency';
import { ADMISSION_HOLD_SECONDS, ConcurrencyAdmission } from '../scheduling/concurrency-admission';
import { SkillsService } from '../skills/skills.service';
import { policyOf } from '../scheduling/retry-policy';
import { TaskDispatchService } from './task-dispatch.service';
import { networkOf, securityOf } from './task-isolation';
import { isFinal } from './task-state';
import { TaskWakeups } from './task-wakeups';
import { TaskTemplateDto } from './tasks.dto';
import { ResolvedSkill, Task } from './tasks.entity';
import { TaskListQuery, TasksRepository } from './tasks.repository';
import { EarlyBriefs } from './early-briefs';

/** The task template fields (POST /tasks/ body, or a workflow's rendered `task_template`). */
export type TaskTemplateInput = TaskTemplateDto;

/** Where a task came from. */
export interface TaskOrigin {
  workflowId?: string;
  deliveryId?: string;
  createdBy?: string;
  /** A workflow's concurrency, its key filled from the event (scheduling/concurrency.ts). */
  concurrency?: TaskConcurrency | null;
  /** A workflow's fair-share weight. */
  weight?: number;
}


@Injectable()
export class TasksService {
  constructor(
    private readonly tasks: TasksRepository,
    @Inject(OBJECT_STORAGE) private readonly storage: ObjectStorage,
    private readonly dispatch: TaskDispatchService,
    private readonly skills: SkillsService,
    private readonly wakeups: TaskWakeups,
    private readonly admission: ConcurrencyAdmission,
    private readonly earlyBriefs: EarlyBriefs,
  ) {}

  /**
   * Validates the template and stores the task as `pending`, with an inline brief kept
   * beside it, in one INSERT; then starts writing the brief to `briefs/<guid>.json` (not
   * waited for: the dispatch waits for it, EarlyBriefs) and wakes the dispatch loop. The
   * answer means the task is durably stored and will be dispatched.
   */
  async createTask(input: TaskTemplateInput, origin: TaskOrigin = {}): Promise<Task> {
    const prepared = await this.prepareTask(input, origin);
    const task = await this.admission.admit(await this.storeTraced(prepared, (values) => this.tasks.insert(values)));
    this.startBrief(prepared, task.status);
    this.wakeups.taskStored();
    return task;
  }

  /**
   * The row of a new `pending` task, validated and with its skills resolved, not yet
   * stored: a caller that stores it itself (a routed webhook, with its ledger row in one
   * statement) calls `taskStored()` once it is.
   */
  async prepareTask(input: TaskTemplateInput, origin: TaskOrigin = {}): Promise<Partial<Task> & { guid: string }> {
    const template = await validTemplate(input);
    const skills = await this.resolveSkills(template.skills ?? []);
    const guid = randomUUID();
    if (template.brief_key !== undefined) await this.assertBriefExists(template.brief_key);
    const concurrency = origin.concurrency !== undefined ? origin.concurrency : postedConcurrency(storedConcurrencyOf(template), origin.workflowId);
    return {
      guid,
      status: 'pending',
      agentImage: template.agent_image,
      runtimeTarget: { type: template.runtime_target.type, namespace: template.runtime_target.namespace ?? '' },
      resources: template.resources ? { cpu: template.resources.cpu, memory: template.resources.memory } : { ...DEFAULT_TASK_RESOURCES },
      env: template.env ?? {},
      ports: (template.ports ?? []).map((port) => ({ container_port: port.container_port, protocol: port.protocol ?? 'tcp' })),
      skills,
      timeoutSeconds: template.timeout_seconds ?? DEFAULT_TASK_TIMEOUT_SECONDS,
      runtimeClass: template.runtime_class ?? null,
      network: networkOf(template.network),
      security: securityOf(template.security),
      podAdditions: podAdditionsOf(template),
      secretEnv: secretEnvOf(template) ?? {},
      briefKey: template.brief_key ?? `briefs/${guid}.json`,
      briefPending: template.brief !== undefined ? JSON.stringify(template.brief) : null,
      dispatcherLabels: template.dispatcher_labels ?? {},
      requestedDispatcher: template.dispatcher ?? null,
      workflowId: origin.workflowId ?? null,
      deliveryId: origin.deliveryId ?? null,
      createdBy: origin.createdBy ?? null,
      ...schedulingFields(template.priority, concurrency, origin),
      retry: template.retry ? policyOf(template.retry) : null,
    };
  }

  /**
   * Runs a new task's INSERT in its `send controller.tasks` span: the row keeps that span's
   * context, which the dispatch and everything after it continue (shared/tracing).
   */
  storeTraced<T>(values: Partial<Task> & { guid: string }, insert: (values: Partial<Task> & { guid: string }) => Promise<T>): Promise<T> {
    const attributes = queueAttributes('send', { 'messaging.message.id': values.guid, ...taskAttributes({ guid: values.guid, workflowId: values.workflowId, agentImage: values.agentImage, runtimeType: values.runtimeTarget?.type }) });
    return inSpan(`send ${TASK_QUEUE}`, { kind: SpanKind.PRODUCER, attributes }, () => insert({ ...values, ...traceColumns() }));
  }

  /**
   * A template checked as POST /tasks/ checks one, for a caller that stores many tasks from
   * it (a workflow's template, checked once rather than once per delivery).
   */
  checkTemplate(input: TaskTemplateInput): Promise<TaskTemplateDto> {
    return validTemplate(input);
  }

  /** `taskStored()` for a task another service stored from `prepareTask`'s row, after its key's admission. */
  async admitStored(values: Partial<Task> & { guid: string }): Promise<void> {
    let status = values.status;
    if (values.concurrencyStrategy === 'cancel_newest' || values.concurrencyStrategy === 'cancel_in_progress') {
      const task = await this.tasks.findByGuid(values.guid);
      status = task ? (await this.admission.admit(task)).status : undefined;
    }
    this.startBrief(values, status);
    this.wakeups.taskStored();
  }

  /** The stored row of a new task (a read leaves its inline brief out), with its status after admission. */
  private startBrief(values: Partial<Task> & { guid: string }, status: string | undefined): void {
    if (status !== 'pending' || !values.briefKey || typeof values.briefPending !== 'string') return;
    this.earlyBriefs.start([{ guid: values.guid, briefKey: values.briefKey, briefPending: values.briefPending }]);
  }

  /** Wakes the dispatch loop for tasks stored by another service's transaction. */
  taskStored(): void {
    this.wakeups.taskStored();
  }

  get repository(): TasksRepository {
    return this.tasks;
  }

  list(query: TaskListQuery): Promise<KeysetPage<Task>> {
    return this.tasks.list(query);
  }

  async get(guid: string): Promise<Task> {
    const task = isUUID(guid) ? await this.tasks.findByGuid(guid) : null;
    if (!task) throw DomainError.notFound('Task');
    return task;
  }

  /**
   * The task's brief as its agent reads it: the inline brief kept on the row until the
   * dispatch loop stores it, then the object at `brief_key`. 404 when it has none.
   */
  async brief(guid: string): Promise<{ body: Buffer; contentType: string }> {
    const task = await this.get(guid);
    const pending = await this.tasks.pendingBrief(task.guid);
    const stream = pending === null && task.briefKey ? await this.storage.get(task.briefKey) : null;
    const body = pending !== null ? Buffer.from(pending, 'utf8') : stream ? await readAll(stream) : null;
    if (!body) throw DomainError.notFound('The brief of this task');
    return { body, contentType: isJson(body) ? 'application/json' : 'application/octet-stream' };
  }

  /**
   * A pending task is cancelled at once. A dispatched or running one is marked as asked to
   * cancel and its dispatcher is told; the task becomes `cancelled` when the dispatcher reports it.
   */
  async cancel(guid: string): Promise<Task> {
    const before = await this.get(guid);
    if (isFinal(before.status)) throw DomainError.conflict(`The task is already ${before.status}.`, { status: before.status });
    if (before.status === 'pending') {
      const cancelled = await this.tasks.transition(guid, 'cancelled', {
        cancelRequestedAt: () => 'now()',
        errorMessage: 'cancelled before it was dispatched',
      }, { from: ['pending'] });
      if (cancelled.moved) return cancelled.task;
    }
    const marked = await this.tasks.markCancelRequested(guid);
    if (!marked) {
      const current = await this.get(guid);
      throw DomainError.conflict(`The task is already ${current.status}.`, { status: current.status });
    }
    const answer = await this.dispatch.requestCancel(marked);
    if (answer === null || (answer.kind !== 'accepted' && answer.status === 404)) {
      // The dispatcher is gone or no longer knows the task: no callback will come.
      const closed = await this.tasks.transition(guid, 'cancelled', { errorMessage: 'cancelled; the dispatcher no longer knew the task' });
      return closed.task ?? marked;
    }
    if (answer.kind !== 'accepted' && answer.status !== 409) {
      throw new DomainError('bad_gateway', `The dispatcher could not cancel the task (${answer.message}); try again.`);
    }
    return this.get(guid);
  }

  /** "slug" pins the skill's latest version now, "slug@N" that version; unknown ones are 400. */
  private async resolveSkills(references: string[]): Promise<ResolvedSkill[]> {
    const resolved: ResolvedSkill[] = [];
    for (const reference of references) resolved.push(await this.skills.resolveRef(reference, 'skills'));
    return resolved;
  }

  /** A brief named by key must exist: the caller hears a 400 now rather than a failed task later. */
  private async assertBriefExists(key: string): Promise<void> {
    // A store that cannot be reached is a 503 (not "no such key"): the caller tries again.
    if (!(await this.storage.exists(key))) {
      throw DomainError.invalid({ brief_key: ['no object with this key exists in object storage'] });
    }
  }
}

/** The same checks as POST /tasks/, for callers that hand over a plain template. */
async function validTemplate(input: TaskTemplateInput): Promise<TaskTemplateDto> {
  // A DTO instance has been through the global ValidationPipe already.
  const template = input instanceof TaskTemplateDto ? input : plainToInstance(TaskTemplateDto, hideReservedKeys(input));
  if (template !== input) {
    const errors = await validate(template, { whitelist: true, forbidUnknownValues: false });
    if (errors.length > 0) throw DomainError.invalid(fieldErrors(errors));
    restoreReservedKeys(template);
  }
  if (template.brief !== undefined && template.brief_key !== undefined) {
    throw DomainError.invalid({ brief: ['give brief or brief_key, not both'] });
  }
  if (template.brief === undefined && template.brief_key === undefined) {
    throw DomainError.invalid({ brief: ['brief or brief_key is required'] });
  }
  return template;
}


/** The queue's columns of a new task (scheduling/): priority, concurrency and fairness group. */
function schedulingFields(priority: number | undefined, concurrency: TaskConcurrency | null, origin: TaskOrigin): Partial<Task> {
  return {
    priority: priority ?? 0,
    concurrencyKey: concurrency?.key ?? null,
    concurrencyLimit: concurrency?.limit ?? null,
    concurrencyStrategy: concurrency?.strategy ?? null,
    // Held from the queue until its admission decides what it does to its key (ConcurrencyAdmission).
    ...(concurrency && concurrency.strategy !== 'queue' ? { nextDispatchAt: new Date(Date.now() + ADMISSION_HOLD_SECONDS * 1000) } : {}),
    fairnessGroup: fairnessGroupOf(concurrency, origin.workflowId ?? null, origin.createdBy ?? null),
    fairnessWeight: origin.weight ?? 1,
  };
}

function storedConcurrencyOf(template: TaskTemplateDto): StoredConcurrency | undefined {
  if (!template.concurrency) return undefined;
  return { key: template.concurrency.key, limit: template.concurrency.limit, strategy: template.concurrency.strategy ?? 'queue' };
}

function isJson(body: Buffer): boolean {
  try {
    JSON.parse(body.toString('utf8'));
    return true;
  } catch {
    return false;
  }
}
