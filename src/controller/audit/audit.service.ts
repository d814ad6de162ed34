import { Inject, Injectable } from '@nestjs/common';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { KeysetRequest } from '../../shared/database/keyset-page';
import { CursorPage, toCursorPage } from '../../shared/http/page';
import { AuditEntry } from './audit.entity';
import { AuditFilters, AuditRepository } from './audit.repository';
import { AuditWriter } from './audit-writer';

export interface AuditEntryView {
  id: string;
  at: string;
  actor: { kind: AuditEntry['actorKind']; name: string };
  action: string;
  resource_type: string;
  resource_id: string | null;
  outcome: AuditEntry['outcome'];
  remote_addr: string | null;
  details: Record<string, unknown>;
}

export function toAuditEntryView(row: AuditEntry): AuditEntryView {
  return {
    id: row.id,
    at: row.at.toISOString(),
    actor: { kind: row.actorKind, name: row.actorName },
    action: row.action,
    resource_type: row.resourceType,
    resource_id: row.resourceId,
    outcome: row.outcome,
    remote_addr: row.remoteAddr,
    details: row.statusCode === null ? row.details : { status_code: row.statusCode, ...row.details },
  };
}

@Injectable()
export class AuditService {
  constructor(
    private readonly entries: AuditRepository,
    private readonly writer: AuditWriter,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async list(filters: AuditFilters, request: KeysetRequest): Promise<CursorPage<AuditEntryView>> {
    // What this process has just recorded is in the list it answers.
    await this.writer.idle();
    const page = await this.entries.list(filters, request);
    return toCursorPage(page, page.items.map(toAuditEntryView), request, { baseUrl: this.config.publicUrl, path: '/api/v1/audit/', query: { ...filters } });
  }
}
