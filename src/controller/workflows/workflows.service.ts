import { podAdditionsOf } from '../../shared/task-protocol/pod-additions';
import { secretEnvOf } from '../../shared/task-protocol/secret-env';
import { Inject, Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Observable } from 'rxjs';
import { QueryFailedError, Repository } from 'typeorm';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { DomainError } from '../../shared/errors/domain-error';
import { Page, PageRequest, toPage } from '../../shared/http/page';
import { isScheduleTrigger, storedScheduleTrigger } from '../schedules/schedule-trigger';
import { scheduledRuns } from '../schedules/schedule-view';
import { policyOf, RetryPolicy } from '../scheduling/retry-policy';
import { networkOf, securityOf } from '../tasks/task-isolation';
import { StoredConcurrency } from '../scheduling/concurrency';
import { WorkflowRoutingCache } from './workflow-routing-cache';
import { CreateWorkflowDto, WorkflowBodyDto, WorkflowTaskTemplateDto } from './workflows.dto';
import { StoredTaskTemplate, StoredTrigger, Workflow } from './workflows.entity';

export interface WorkflowView {
  id: string;
  name: string;
  enabled: boolean;
  priority: number;
  triggers: StoredTrigger[];
  task_template: StoredTaskTemplate;
  concurrency: StoredConcurrency | null;
  weight: number;
  retry: RetryPolicy;
  created_at: string;
  updated_at: string;
  /** A workflow with a schedule: its next tick times (none while it is disabled). */
  next_runs?: string[];
}

export function toWorkflowView(workflow: Workflow): WorkflowView {
  const nextRuns = scheduledRuns(workflow);
  return {
    id: workflow.id,
    name: workflow.name,
    enabled: workflow.enabled,
    priority: workflow.priority,
    triggers: workflow.triggers,
    task_template: workflow.taskTemplate,
    concurrency: workflow.concurrency,
    weight: workflow.weight,
    retry: policyOf(workflow.retry),
    created_at: workflow.createdAt.toISOString(),
    updated_at: workflow.updatedAt.toISOString(),
    ...(nextRuns ? { next_runs: nextRuns.map((time) => time.toISOString()) } : {}),
  };
}

/** Copies only the template's known fields, so what is stored is what was validated. */
function storedTemplate(template: WorkflowTaskTemplateDto): StoredTaskTemplate {
  const stored: StoredTaskTemplate = {
    agent_image: template.agent_image,
    runtime_target: { type: template.runtime_target.type, namespace: template.runtime_target.namespace ?? '' },
  };
  if (template.resources) stored.resources = { ...template.resources };
  if (template.env) stored.env = template.env;
  if (template.ports) stored.ports = template.ports.map((port) => ({ container_port: port.container_port, protocol: (port.protocol ?? 'tcp').toLowerCase() }));
  if (template.skills) stored.skills = template.skills;
  if (template.timeout_seconds !== undefined) stored.timeout_seconds = template.timeout_seconds;
  if (template.brief !== undefined) stored.brief = template.brief;
  if (template.dispatcher_labels) stored.dispatcher_labels = template.dispatcher_labels;
  if (template.priority !== undefined) stored.priority = template.priority;
  if (template.runtime_class !== undefined) stored.runtime_class = template.runtime_class;
  const network = networkOf(template.network);
  if (network) stored.network = network;
  const security = securityOf(template.security);
  if (security) stored.security = security;
  const secretEnv = secretEnvOf(template);
  if (secretEnv) stored.secret_env = secretEnv;
  return { ...stored, ...podAdditionsOf(template) };
}

function storedConcurrency(body: WorkflowBodyDto): StoredConcurrency | null {
  if (!body.concurrency) return null;
  const { key, limit, strategy } = body.concurrency;
  return { ...(key !== undefined ? { key } : {}), limit, strategy: strategy ?? 'queue' };
}

function storedTriggers(body: WorkflowBodyDto): StoredTrigger[] {
  return body.triggers.map((trigger) =>
    isScheduleTrigger(trigger) ? storedScheduleTrigger(trigger) : { source: trigger.source, event: trigger.event!, filter: trigger.filter ?? {} });
}

@Injectable()
export class WorkflowsService {
  constructor(
    @InjectRepository(Workflow) private readonly workflows: Repository<Workflow>,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly routing: WorkflowRoutingCache,
  ) {}

  async create(body: CreateWorkflowDto): Promise<WorkflowView> {
    const workflow = this.workflows.create({
      id: body.id,
      name: body.name ?? body.id,
      enabled: body.enabled ?? true,
      priority: body.priority ?? 100,
      triggers: storedTriggers(body),
      taskTemplate: storedTemplate(body.task_template),
      concurrency: storedConcurrency(body),
      weight: body.weight ?? 1,
      retry: body.retry ? policyOf(body.retry) : null,
    });
    try {
      // The template's brief is free JSON, which TypeORM's partial-entity type cannot express.
      await this.workflows.insert(workflow as Parameters<Repository<Workflow>['insert']>[0]);
    } catch (error) {
      if (error instanceof QueryFailedError && (error.driverError as { code?: string })?.code === '23505') {
        throw DomainError.conflict(`A workflow with id "${body.id}" exists already.`);
      }
      throw error;
    }
    await this.routing.changed();
    return toWorkflowView(await this.get(body.id));
  }

  /** PUT replaces every field; a field left out takes its default again. */
  async replace(id: string, body: WorkflowBodyDto): Promise<WorkflowView> {
    const workflow = await this.get(id);
    Object.assign(workflow, {
      name: body.name ?? id,
      enabled: body.enabled ?? true,
      priority: body.priority ?? 100,
      triggers: storedTriggers(body),
      taskTemplate: storedTemplate(body.task_template),
      concurrency: storedConcurrency(body),
      weight: body.weight ?? 1,
      retry: body.retry ? policyOf(body.retry) : null,
    });
    const saved = await this.workflows.save(workflow);
    await this.routing.changed();
    return toWorkflowView(saved);
  }

  async remove(id: string): Promise<void> {
    const result = await this.workflows.delete({ id });
    await this.routing.changed();
    if (!result.affected) throw DomainError.notFound(`Workflow "${id}"`);
  }

  async get(id: string): Promise<Workflow> {
    const workflow = await this.workflows.findOneBy({ id });
    if (!workflow) throw DomainError.notFound(`Workflow "${id}"`);
    return workflow;
  }

  async list(page: PageRequest): Promise<Page<WorkflowView>> {
    const [rows, count] = await this.workflows.findAndCount({
      order: { priority: 'ASC', createdAt: 'ASC', id: 'ASC' },
      take: page.limit,
      skip: page.offset,
    });
    return toPage(rows.map(toWorkflowView), count, page, { baseUrl: this.config.publicUrl, path: '/api/v1/workflows/' });
  }

  /** Emits when any replica changed a workflow (the schedule ticker wakes on it). */
  get changes(): Observable<void> {
    return this.routing.changes;
  }

  /** The workflows an event may be routed to, in routing order. */
  routingCandidates(): Promise<Workflow[]> {
    return this.routing.get();
  }
}
