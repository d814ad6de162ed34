import { Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { Workflow } from './workflows.entity';

/** How often a replica asks whether any replica changed a workflow. */
const VERSION_CHECK_MS = 1000;

/**
 * The enabled workflows in routing order, held in memory so a delivery costs no query.
 * A change made here drops the list at once; a change made by another replica is seen by
 * a cheap version check (latest `updated_at` and the row count) within a second.
 */
@Injectable()
export class WorkflowRoutingCache implements OnModuleDestroy {
  private readonly logger = new Logger(WorkflowRoutingCache.name);
  private candidates: Promise<Workflow[]> | null = null;
  private version: string | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(@InjectRepository(Workflow) private readonly workflows: Repository<Workflow>) {}

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

  onModuleDestroy(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
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
