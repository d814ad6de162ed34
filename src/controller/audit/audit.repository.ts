import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { equalityFilters, keysetPage, KeysetPage, KeysetRequest } from '../../shared/database/keyset-page';
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
  ("at", "actor_kind", "actor_id", "actor_name", "action", "resource_type", "resource_id", "outcome", "status_code", "remote_addr", "details")
  SELECT * FROM unnest($1::timestamptz[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::int[], $10::text[], $11::jsonb[])`;

/** The audit rows: one statement per write, keyset pages by `(at, id)`, and the retention sweep. */
@Injectable()
export class AuditRepository {
  constructor(@InjectRepository(AuditEntry) private readonly entries: Repository<AuditEntry>) {}

  /** Any number of rows in one statement (one round trip, no transaction around it). */
  async insertMany(entries: NewAuditEntry[]): Promise<void> {
    const column = <T>(pick: (entry: NewAuditEntry) => T): T[] => entries.map(pick);
    await this.entries.query(INSERT, [
      column((e) => e.at), column((e) => e.actorKind), column((e) => e.actorId), column((e) => e.actorName), column((e) => e.action), column((e) => e.resourceType),
      column((e) => e.resourceId), column((e) => e.outcome), column((e) => e.statusCode), column((e) => e.remoteAddr), column((e) => JSON.stringify(e.details)),
    ]);
  }

  /** Newest first; each filter but `since` has an index in that order. */
  list(filters: AuditFilters, request: KeysetRequest): Promise<KeysetPage<AuditEntry>> {
    const rows = this.entries.createQueryBuilder('a');
    const key = equalityFilters(
      rows,
      { time: 'a.at', id: 'a.id' },
      { 'a.actor_name': filters.actor || undefined, 'a.action': filters.action || undefined, 'a.resource_type': filters.resource_type || undefined, 'a.resource_id': filters.resource_id || undefined },
      [['a.actor_name'], ['a.action'], ['a.resource_type', 'a.resource_id']],
    );
    if (filters.since) rows.andWhere('a.at >= :since', { since: filters.since });
    return keysetPage(rows, key, request);
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
