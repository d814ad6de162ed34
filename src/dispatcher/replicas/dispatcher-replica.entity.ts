import { Column, Entity, PrimaryColumn } from 'typeorm';

/** One dispatcher replica (DISPATCHER_INSTANCE) and when it last wrote its heartbeat; repeats migration 1710000000100. */
@Entity({ name: 'replicas' })
export class DispatcherReplicaEntity {
  @PrimaryColumn('text', { primaryKeyConstraintName: 'replicas_pkey' }) instance: string;
  /** The runtime backends whose agents live on this replica's host (process, local container engine). */
  @Column('text', { name: 'host_local_backends', array: true, default: () => "'{}'" }) hostLocalBackends: string[];
  @Column('timestamptz', { name: 'started_at', default: () => 'now()' }) startedAt: Date;
  @Column('timestamptz', { name: 'last_seen', default: () => 'now()' }) lastSeen: Date;
}
