import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn, Unique, UpdateDateColumn } from 'typeorm';

/** A dispatcher that checked in: where it listens, what it runs, and when it was last heard. */
@Entity({ name: 'dispatchers' })
@Unique('dispatchers_name_key', ['name'])
@Unique('dispatchers_slug_key', ['slug'])
export class Dispatcher {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'dispatchers_pkey' })
  guid: string;

  @Column({ type: 'text' })
  name: string;

  @Column({ type: 'text' })
  slug: string;

  @Column({ name: 'endpoint_url', type: 'text' })
  endpointUrl: string;

  @Column({ type: 'text', default: '' })
  cloud: string;

  @Column({ type: 'jsonb', default: () => "'[]'" })
  backends: string[];

  @Column({ type: 'jsonb', default: () => "'{}'" })
  labels: Record<string, string>;

  @Column({ name: 'heartbeat_interval_seconds', type: 'integer' })
  heartbeatIntervalSeconds: number;

  /** The dispatcher's own `api_key`, AES-256-GCM encrypted with a key derived from SECRET_KEY. */
  @Column({ name: 'api_key_encrypted', type: 'text', nullable: true })
  apiKeyEncrypted: string | null;

  /** Who may check in under this name: `client:<client_id>` or `operator`; null until the first check-in binds it. */
  @Column({ name: 'bound_to', type: 'text', nullable: true })
  boundTo: string | null;

  @Column({ name: 'active_tasks', type: 'integer', default: 0 })
  activeTasks: number;

  @Column({ type: 'integer', nullable: true })
  capacity: number | null;

  /** The state last announced on the event stream (`dispatcher.state`). */
  @Column({ name: 'reported_state', type: 'text', default: 'offline' })
  reportedState: string;

  /** The dispatcher's warm pools as its last heartbeat reported them. */
  @Column({ name: 'warm_pools', type: 'jsonb', default: () => "'[]'" })
  warmPools: WarmPoolState[];

  @Column({ name: 'last_heartbeat_at', type: 'timestamptz', nullable: true })
  lastHeartbeatAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}

/** One warm pool of a dispatcher, as its heartbeat reports it. */
export interface WarmPoolState {
  name: string;
  backend: string;
  image: string;
  size: number;
  idle: number;
  claimed: number;
}
