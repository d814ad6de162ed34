import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { IsNull, Repository } from 'typeorm';
import { DomainError } from '../../shared/errors/domain-error';
import { OperatorToken } from './operator-token.entity';
import { newToken, safeEqual, tokenHash } from './secret-hash';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** last_used_at is written at most this often per token, not on every request. */
const LAST_USED_RESOLUTION_MS = 60_000;

/** Operator tokens made with the CLI: created (shown once), listed, revoked, verified. */
@Injectable()
export class OperatorTokensService {
  constructor(@InjectRepository(OperatorToken) private readonly tokens: Repository<OperatorToken>) {}

  async create(name: string): Promise<{ token: string; record: OperatorToken }> {
    const trimmed = name.trim();
    if (!trimmed || trimmed.length > 100) {
      throw DomainError.invalid({ name: ['name must be 1 to 100 characters.'] });
    }
    if (UUID.test(trimmed)) throw DomainError.invalid({ name: ['name must not look like a token id (a UUID).'] });
    if (await this.tokens.existsBy({ name: trimmed, revokedAt: IsNull() })) {
      throw DomainError.conflict(`A live operator token named "${trimmed}" exists already; revoke it or pick another name.`);
    }
    const token = newToken('atc_op_');
    const record = await this.tokens.save(this.tokens.create({ name: trimmed, tokenHash: tokenHash(token) }));
    return { token, record };
  }

  list(): Promise<OperatorToken[]> {
    return this.tokens.find({ order: { createdAt: 'ASC' } });
  }

  /** Revokes by id, or by the name of a live token. Revoking twice is not an error. */
  async revoke(idOrName: string): Promise<OperatorToken> {
    const record = UUID.test(idOrName)
      ? await this.tokens.findOneBy({ id: idOrName.toLowerCase() })
      : await this.tokens.findOneBy({ name: idOrName, revokedAt: IsNull() });
    if (!record) throw DomainError.notFound(`Operator token "${idOrName}"`);
    if (!record.revokedAt) {
      record.revokedAt = new Date();
      await this.tokens.update({ id: record.id }, { revokedAt: record.revokedAt });
    }
    return record;
  }

  /** The live token matching the presented value, or null. */
  async verify(presented: string): Promise<OperatorToken | null> {
    const hash = tokenHash(presented);
    const record = await this.tokens.findOneBy({ tokenHash: hash, revokedAt: IsNull() });
    if (!record || !safeEqual(hash, record.tokenHash)) return null;
    const now = new Date();
    if (!record.lastUsedAt || now.getTime() - record.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
      await this.tokens.update({ id: record.id }, { lastUsedAt: now });
      record.lastUsedAt = now;
    }
    return record;
  }
}
