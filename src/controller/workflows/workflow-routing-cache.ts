import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Client } from 'pg';
import { Repository } from 'typeorm';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { Workflow } from './workflows.entity';

/** How often a replica asks whether any replica changed a workflow. */
const VERSION_CHECK_MS = 1000;
/** Notified by the replica that changed a workflow; the version check covers a lost listener. */
export const WORKFLOWS_CHANGED_CHANNEL = 'controller_workflows_changed';
const RECONNECT_MS = [500, 1000, 2000, 5000];

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
  private listener?: Client;
  private stopped = false;
  private attempt = 0;

  constructor(
    @InjectRepository(Workflow) private readonly workflows: Repository<Workflow>,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (this.config.databaseEmbedded || !this.config.databaseUrl) return;
    await this.listen();
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
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.listener?.end().catch(() => undefined);
  }

  private async listen(): Promise<void> {
    const client = new Client({ connectionString: this.config.databaseUrl!, application_name: 'agent-tasks-controller-workflows' });
    client.on('notification', () => this.invalidate());
    client.on('error', (error) => this.logger.warn({ err: error }, 'The workflow change listener lost its connection'));
    client.on('end', () => this.reconnect(client));
    this.listener = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${WORKFLOWS_CHANGED_CHANNEL}`);
      this.attempt = 0;
      // Changes made while the listener was away are in the database now.
      this.invalidate();
    } catch (error) {
      this.logger.warn({ err: error }, 'The workflow change listener could not connect; the version check covers it');
      await client.end().catch(() => undefined);
      this.reconnect(client);
    }
  }

  /** Once per lost connection: `end` and a failed connect may both report the same one. */
  private reconnect(client: Client): void {
    if (this.stopped || client !== this.listener) return;
    this.listener = undefined;
    const delay = RECONNECT_MS[Math.min(this.attempt++, RECONNECT_MS.length - 1)];
    setTimeout(() => void this.listen(), delay).unref();
  }

  private async load(): Promise<Workflow[]> {
    this.version = await this.currentVersion();
    return this.workflows.find({ where: { enabled: true }, order: { priority: 'ASC', createdAt: 'ASC', id: 'ASC' } });
  }

  private startChecking(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.checkVersion(), VERSION_CHECK_MS);
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
