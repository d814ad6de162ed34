import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { plainToInstance } from 'class-transformer';
import { isUUID, validate } from 'class-validator';
import { FindOptionsWhere, In, Repository } from 'typeorm';
import { DomainError } from '../../shared/errors/domain-error';
import { fieldErrors } from '../../shared/errors/validation';
import { OBJECT_STORAGE, ObjectStorage } from '../../shared/storage/object-storage';
import { SkillsService } from '../skills/skills.service';
import { TaskDispatchService } from './task-dispatch.service';
import { isFinal } from './task-state';
import { TaskTemplateDto } from './tasks.dto';
import { ResolvedSkill, Task, taskPatch, TaskStatus } from './tasks.entity';

/** The task template fields (POST /tasks/ body, or a workflow's rendered `task_template`). */
export type TaskTemplateInput = TaskTemplateDto;

/** Where a task came from. */
export interface TaskOrigin {
  workflowId?: string;
  deliveryId?: string;
  createdBy?: string;
}

export interface TaskListQuery {
  limit: number;
  offset: number;
  status?: TaskStatus;
  workflow?: string;
}

const DEFAULT_RESOURCES = { cpu: '500m', memory: '512Mi' };
const DEFAULT_TIMEOUT_SECONDS = 3600;

@Injectable()
export class TasksService {
  private readonly logger = new Logger(TasksService.name);

  constructor(
    @InjectRepository(Task) private readonly tasks: Repository<Task>,
    @Inject(OBJECT_STORAGE) private readonly storage: ObjectStorage,
    private readonly dispatch: TaskDispatchService,
    private readonly skills: SkillsService,
  ) {}

  /**
   * Validates the template, stores an inline brief as `briefs/<guid>.json`, keeps the task as
   * `pending` and offers it to the dispatchers at once. Answers the task as it is afterwards:
   * `dispatched`, or still `pending` when no dispatcher took it (the retry loop goes on).
   */
  async createTask(input: TaskTemplateInput, origin: TaskOrigin = {}): Promise<Task> {
    const template = await validTemplate(input);
    const skills = await this.resolveSkills(template.skills ?? []);
    const guid = randomUUID();
    const briefKey = await this.storeBrief(guid, template);
    const task = this.tasks.create({
      guid,
      status: 'pending',
      agentImage: template.agent_image,
      runtimeTarget: { type: template.runtime_target.type, namespace: template.runtime_target.namespace ?? '' },
      resources: template.resources ? { cpu: template.resources.cpu, memory: template.resources.memory } : DEFAULT_RESOURCES,
      env: template.env ?? {},
      ports: (template.ports ?? []).map((port) => ({ container_port: port.container_port, protocol: port.protocol ?? 'tcp' })),
      skills,
      timeoutSeconds: template.timeout_seconds ?? DEFAULT_TIMEOUT_SECONDS,
      briefKey,
      dispatcherLabels: template.dispatcher_labels ?? {},
      requestedDispatcher: template.dispatcher ?? null,
      workflowId: origin.workflowId ?? null,
      deliveryId: origin.deliveryId ?? null,
      createdBy: origin.createdBy ?? null,
    });
    await this.tasks.insert(taskPatch(task));
    try {
      await this.dispatch.dispatch(guid);
    } catch (error) {
      // The task is stored: the retry loop offers it again.
      this.logger.error({ task: guid, err: error }, 'Dispatching the new task failed; it stays pending');
    }
    return this.tasks.findOneByOrFail({ guid });
  }

  async list(query: TaskListQuery): Promise<{ count: number; results: Task[] }> {
    const where: FindOptionsWhere<Task> = {};
    if (query.status) where.status = query.status;
    if (query.workflow) where.workflowId = query.workflow;
    const [results, count] = await this.tasks.findAndCount({
      where,
      order: { createdAt: 'DESC', guid: 'ASC' },
      take: query.limit,
      skip: query.offset,
    });
    return { count, results };
  }

  async get(guid: string): Promise<Task> {
    const task = isUUID(guid) ? await this.tasks.findOneBy({ guid }) : null;
    if (!task) throw DomainError.notFound('Task');
    return task;
  }

  /**
   * A pending task is cancelled at once. A dispatched or running one is marked as asked to
   * cancel and its dispatcher is told; the task becomes `cancelled` when the dispatcher reports it.
   */
  async cancel(guid: string): Promise<Task> {
    const task = await this.get(guid);
    if (isFinal(task.status)) throw DomainError.conflict(`The task is already ${task.status}.`, { status: task.status });
    const cancelledBeforeDispatch = await this.tasks.update(
      { guid, status: 'pending' },
      { status: 'cancelled', cancelRequestedAt: new Date(), finishedAt: new Date(), errorMessage: 'cancelled before it was dispatched' },
    );
    if (cancelledBeforeDispatch.affected === 1) return this.get(guid);

    const marked = await this.tasks.update({ guid, status: In(['dispatched', 'running']) }, { cancelRequestedAt: new Date() });
    const current = await this.get(guid);
    if (marked.affected !== 1) throw DomainError.conflict(`The task is already ${current.status}.`, { status: current.status });

    const answer = await this.dispatch.requestCancel(current);
    if (answer === null || (answer.kind !== 'accepted' && answer.status === 404)) {
      // The dispatcher is gone or no longer knows the task: no callback will come.
      await this.tasks.update(
        { guid, status: In(['dispatched', 'running']) },
        { status: 'cancelled', finishedAt: new Date(), errorMessage: 'cancelled; the dispatcher no longer knew the task' },
      );
    } else if (answer.kind !== 'accepted' && answer.status !== 409) {
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

  private async storeBrief(guid: string, template: TaskTemplateDto): Promise<string> {
    if (template.brief !== undefined) {
      const key = `briefs/${guid}.json`;
      await this.storage.put(key, Buffer.from(JSON.stringify(template.brief), 'utf8'), { contentType: 'application/json' });
      return key;
    }
    const key = template.brief_key!;
    if (!(await this.storage.exists(key).catch(() => false))) {
      throw DomainError.invalid({ brief_key: ['no object with this key exists in object storage'] });
    }
    return key;
  }
}

/** The same checks as POST /tasks/, for callers that hand over a plain template. */
async function validTemplate(input: TaskTemplateInput): Promise<TaskTemplateDto> {
  const template = input instanceof TaskTemplateDto ? input : plainToInstance(TaskTemplateDto, input as object);
  const errors = await validate(template, { whitelist: true, forbidUnknownValues: false });
  if (errors.length > 0) throw DomainError.invalid(fieldErrors(errors));
  if (template.brief !== undefined && template.brief_key !== undefined) {
    throw DomainError.invalid({ brief: ['give brief or brief_key, not both'] });
  }
  if (template.brief === undefined && template.brief_key === undefined) {
    throw DomainError.invalid({ brief: ['brief or brief_key is required'] });
  }
  return template;
}

