import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { ACTIVE_STATUSES } from '../tasks/task-state';

const REPLICAS = '"dispatcher"."replicas"';
const TASKS = '"dispatcher"."tasks"';

export interface LostReplica {
  instance: string;
  hostLocalBackends: string[];
  lastSeen: Date;
}

/** The replicas table: heartbeats, and the claim of a replica that went silent. Times are the database's. */
@Injectable()
export class ReplicasRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** Records that `instance` is alive now, with the backends whose agents live on its host. */
  async heartbeat(instance: string, hostLocalBackends: string[], starting: boolean): Promise<void> {
    await this.db.query(
      `INSERT INTO ${REPLICAS} (instance, host_local_backends, started_at, last_seen) VALUES ($1, $2, now(), now())
       ON CONFLICT (instance) DO UPDATE SET host_local_backends = EXCLUDED.host_local_backends, last_seen = now()
         ${starting ? ', started_at = now()' : ''}`,
      [instance, hostLocalBackends],
    );
  }

  /**
   * Claims one other replica silent for more than `lostSeconds`, inside `manager`'s
   * transaction: FOR UPDATE SKIP LOCKED, so one survivor handles it and the others skip it.
   * The silence is checked again on the locked row, so a heartbeat that got in first wins.
   */
  async claimLost(manager: EntityManager, self: string, lostSeconds: number): Promise<LostReplica | null> {
    const rows: { instance: string; host_local_backends: string[]; last_seen: Date }[] = await manager.query(
      `SELECT instance, host_local_backends, last_seen FROM ${REPLICAS}
       WHERE instance <> $1 AND last_seen < now() - make_interval(secs => $2)
       ORDER BY last_seen LIMIT 1 FOR UPDATE SKIP LOCKED`,
      [self, lostSeconds],
    );
    const [row] = rows;
    return row ? { instance: row.instance, hostLocalBackends: row.host_local_backends, lastSeen: row.last_seen } : null;
  }

  /** The live tasks whose agent the lost replica started on its own host (Jobs are anyone's to follow). */
  async hostLocalTasksOf(manager: EntityManager, replica: LostReplica): Promise<string[]> {
    const rows: { task_id: string }[] = await manager.query(
      `SELECT task_id FROM ${TASKS} WHERE runtime_owner = $1 AND status = ANY($2) AND runtime_backend = ANY($3) ORDER BY seq`,
      [replica.instance, ACTIVE_STATUSES, replica.hostLocalBackends],
    );
    return rows.map((row) => row.task_id);
  }

  /** Drops the lost replica's row once its tasks are ended; it writes a new one if it ever comes back. */
  async forget(manager: EntityManager, instance: string): Promise<void> {
    await manager.query(`DELETE FROM ${REPLICAS} WHERE instance = $1`, [instance]);
  }
}
