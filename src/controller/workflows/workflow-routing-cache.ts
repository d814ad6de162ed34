import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Subject } from 'rxjs';
import { Repository } from 'typeorm';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { PgListener } from '../../shared/database/pg-listener';
import { Workflow } from './workflows.entity';
import { outsideTraces } from '../../shared/tracing/trace-context';

/** How often a replica asks whether any replica changed a workflow. */
const VERSION_CHECK_MS = 1000;
/** Notified by the replica that changed a workflow; the version check covers a lost listener. */
export const WORKFLOWS_CHANGED_CHANNEL = 'controller_workflows_changed';

/**
 * The enabled workflows in routing order, held in memory so a delivery costs no query.
 * A change made here drops the list at once and is announced with NOTIFY; other replicas
 * LISTEN on a connection of their own, and a cheap version check (latest `updated_at` and
 * the row count) every second covers a listener that is away.
 */
@Injectable()
export class WorkflowRoutingCache implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(WorkflowRoutingCache.name);
  private candidates: Promise<Workflow[]> | null = null;
  private version: string | null = null;
  private timer: NodeJS.Timeout | null = null;
  private listener?: PgListener;
  /** Emits whenever the list is dropped: a workflow changed here or on another replica. */
  readonly changes = new Subject<void>();

  constructor(
    @InjectRepository(Workflow) private readonly workflows: Repository<Workflow>,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (this.config.databaseEmbedded || !this.config.databaseUrl) return;
    // Any notification, or a reconnect after which one may have been missed, drops the list.
    this.listener = new PgListener(this.config.databaseUrl, WORKFLOWS_CHANGED_CHANNEL, () => this.invalidate(), this.logger);
    await this.listener.start();
  }

  /** Enabled workflows, lowest priority number first, then oldest. */
  get(): Promise<Workflow[]> {
    this.startChecking();
    if (!this.candidates) {
      const loading = this.load();
      this.candidates = loading;
      loading.catch(() => {
        if (this.candidates === loading) this.candidates = null;
      });
    }
    return this.candidates;
  }

  invalidate(): void {
    this.candidates = null;
    this.changes.next();
  }

  /** A workflow changed here: drop the list and tell the other replicas. */
  async changed(): Promise<void> {
    this.invalidate();
    if (this.config.databaseEmbedded) return;
    await this.workflows.query(`SELECT pg_notify('${WORKFLOWS_CHANGED_CHANNEL}', '')`).catch((error: unknown) => {
      this.logger.warn({ err: error }, 'Workflow change not announced; other replicas see it at their next version check');
    });
  }

  async onModuleDestroy(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.listener?.stop();
  }

  private async load(): Promise<Workflow[]> {
    this.version = await this.currentVersion();
    return this.workflows.find({ where: { enabled: true }, order: { priority: 'ASC', createdAt: 'ASC', id: 'ASC' } });
  }

  private startChecking(): void {
    if (this.timer) return;
    // Started by the first delivery, the checks would otherwise all be recorded in its trace.
    this.timer = outsideTraces(() => setInterval(() => void this.checkVersion(), VERSION_CHECK_MS));
    this.timer.unref();
  }

  private async checkVersion(): Promise<void> {
    if (!this.candidates) return;
    try {
      if ((await this.currentVersion()) !== this.version) this.invalidate();
    } catch (error) {
      this.logger.warn({ err: error }, 'Workflow version check failed; routing keeps the list it has');
    }
  }

  private async currentVersion(): Promise<string> {
    const row = await this.workflows
      .createQueryBuilder('workflow')
      .select('max(workflow.updated_at)::text', 'latest')
      .addSelect('count(*)', 'total')
      .getRawOne<{ latest: string | null; total: string | number }>();
    return `${row?.latest ?? ''}/${row?.total ?? 0}`;
  }
}
