import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';
import type { Scope } from '../auth/scopes';

/** An OAuth 2.0 client (client credentials grant). Its secret is kept as a scrypt hash. */
@Entity({ name: 'oauth_clients' })
export class OAuthClient {
  /** The public `client_id`. */
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'oauth_clients_pkey' })
  id: string;

  @Column({ type: 'text' })
  name: string;

  @Column({ type: 'text', array: true })
  scopes: Scope[];

  @Column({ name: 'secret_hash', type: 'text' })
  secretHash: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
