import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, Unique } from 'typeorm';

/** An operator token made with the CLI. Only its SHA-256 is kept; the token is shown once. */
@Entity({ name: 'operator_tokens' })
@Unique('operator_tokens_token_hash_key', ['tokenHash'])
// A name picks out one live token (for `token revoke <name>`); revoked names can be reused.
@Index('operator_tokens_live_name_key', ['name'], { unique: true, where: '"revoked_at" IS NULL' })
export class OperatorToken {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'operator_tokens_pkey' })
  id: string;

  @Column({ type: 'text' })
  name: string;

  @Column({ name: 'token_hash', type: 'text' })
  tokenHash: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'last_used_at', type: 'timestamptz', nullable: true })
  lastUsedAt: Date | null;

  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt: Date | null;
}
