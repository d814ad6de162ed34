import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * The queue's virtual time per priority (start-time fair queuing): the largest `fair_tag` a
 * claim has taken. A task of a group with nothing pending joins at this time, so a group
 * that was idle neither jumps ahead of the groups with work nor waits behind their backlog.
 */
@Entity({ name: 'queue_clock' })
export class QueueClock {
  @PrimaryColumn({ type: 'integer', primaryKeyConstraintName: 'queue_clock_pkey' })
  priority: number;

  @Column({ name: 'now_tag', type: 'double precision', default: 0 })
  nowTag: number;
}
