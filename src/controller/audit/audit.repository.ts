import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { keysetPage, KeysetPage, KeysetRequest } from '../../shared/database/keyset-page';
import { NewAuditEntry } from './audit-plan';
import { AuditEntry } from './audit.entity';

export interface AuditFilters {
  actor?: string;
  action?: string;
  resource_type?: string;
  resource_id?: string;
  since?: string;
}

const INSERT = `INSERT INTO "controller"."audit_entries"
  ("actor_kind", "actor_id", "actor_name", "action", "resource_type", "resource_id", "outcome", "status_code", "remote_addr", "details")
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`;

/** The audit rows: one statement per write, keyset pages by `(at, id)`, and the retention sweep. */
@Injectable()
export class AuditRepository {
  constructor(@InjectRepository(AuditEntry) private readonly entries: Repository<AuditEntry>) {}

  /** One round trip, no transaction around it: the write sits on every audited request. */
  async insert(entry: NewAuditEntry): Promise<void> {
    await this.entries.query(INSERT, [
      entry.actorKind, entry.actorId, entry.actorName, entry.action, entry.resourceType, entry.resourceId,
      entry.outcome, entry.statusCode, entry.remoteAddr, JSON.stringify(entry.details),
    ]);
  }

  /** Newest first; each filter but `since` has an index in that order. */
  list(filters: AuditFilters, request: KeysetRequest): Promise<KeysetPage<AuditEntry>> {
    const rows = this.entries.createQueryBuilder('a');
    if (filters.actor) rows.andWhere('a.actor_name = :actor', { actor: filters.actor });
    if (filters.action) rows.andWhere('a.action = :action', { action: filters.action });
    if (filters.resource_type) rows.andWhere('a.resource_type = :resourceType', { resourceType: filters.resource_type });
    if (filters.resource_id) rows.andWhere('a.resource_id = :resourceId', { resourceId: filters.resource_id });
    if (filters.since) rows.andWhere('a.at >= :since', { since: filters.since });
    return keysetPage(rows, { time: 'a.at', id: 'a.id' }, request);
  }

  async deleteOlderThan(days: number, limit: number): Promise<number> {
    const rows: unknown[] = await this.entries.query(
      `DELETE FROM "controller"."audit_entries" WHERE id IN (
         SELECT id FROM "controller"."audit_entries" WHERE at < now() - make_interval(days => $1)
         ORDER BY at, id LIMIT $2 FOR UPDATE SKIP LOCKED)
       RETURNING id`,
      [days, limit],
    );
    return rows.length;
  }
}
