import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn, Unique } from 'typeorm';
import type { Scope } from '../auth/scopes';
import { OAuthClient } from './oauth-client.entity';

/**
 * An issued access token, kept as its SHA-256 with its expiry. Deleting the client
 * deletes its tokens (ON DELETE CASCADE), so they stop working at once.
 */
@Entity({ name: 'oauth_access_tokens' })
@Unique('oauth_access_tokens_token_hash_key', ['tokenHash'])
@Index('oauth_access_tokens_client_id_idx', ['clientId'])
@Index('oauth_access_tokens_expires_at_idx', ['expiresAt'])
export class OAuthAccessToken {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'oauth_access_tokens_pkey' })
  id: string;

  @Column({ name: 'token_hash', type: 'text' })
  tokenHash: string;

  @Column({ name: 'client_id', type: 'uuid' })
  clientId: string;

  @ManyToOne(() => OAuthClient, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'client_id', foreignKeyConstraintName: 'oauth_access_tokens_client_id_fkey' })
  client?: OAuthClient;

  @Column({ type: 'text', array: true })
  scopes: Scope[];

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
