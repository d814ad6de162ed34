import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { DomainError } from '../../shared/errors/domain-error';
import { Scope, SCOPES, unknownScopes } from '../auth/scopes';
import { newToken } from '../auth/secret-hash';
import { hashClientSecret } from './client-secret';
import { OAuthClient } from './oauth-client.entity';
import { CreatedOAuthClientView, OAuthClientView } from './oauth.dto';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** OAuth clients, managed by operators. The secret is returned by `create` only. */
@Injectable()
export class OAuthClientsService {
  constructor(@InjectRepository(OAuthClient) private readonly clients: Repository<OAuthClient>) {}

  async create(name: string, scopes: string[]): Promise<CreatedOAuthClientView> {
    const unknown = unknownScopes(scopes);
    if (unknown.length > 0) {
      throw DomainError.invalid({
        scopes: [`Unknown scopes: ${unknown.join(', ')}. Allowed scopes: ${SCOPES.join(' ')}.`],
      });
    }
    const secret = newToken('atc_cs_');
    const client = await this.clients.save(
      this.clients.create({ name: name.trim(), scopes: [...new Set(scopes)] as Scope[], secretHash: await hashClientSecret(secret) }),
    );
    return { ...toView(client), client_secret: secret };
  }

  async list(): Promise<OAuthClientView[]> {
    return (await this.clients.find({ order: { createdAt: 'ASC' } })).map(toView);
  }

  /** Deletes the client; its access tokens go with it (ON DELETE CASCADE). */
  async delete(clientId: string): Promise<void> {
    const result = UUID.test(clientId) ? await this.clients.delete({ id: clientId.toLowerCase() }) : { affected: 0 };
    if (!result.affected) throw DomainError.notFound(`OAuth client "${clientId}"`);
  }
}

function toView(client: OAuthClient): OAuthClientView {
  return { client_id: client.id, name: client.name, scopes: client.scopes, created_at: client.createdAt.toISOString() };
}
