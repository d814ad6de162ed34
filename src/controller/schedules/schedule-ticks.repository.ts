import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Workflow } from '../workflows/workflows.entity';

const TICKS = '"controller"."schedule_ticks"';

/** Rows older than this are pruned, except each workflow's latest (its schedule's state). */
const KEEP_TICKS_HOURS = 24;
const PRUNE_BATCH = 5000;

/** The ledger of schedule ticks that made a task, and the workflows that tick. */
@Injectable()
export class ScheduleTicksRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** The enabled workflows with at least one schedule trigger. */
  scheduledWorkflows(): Promise<Workflow[]> {
    return this.db.getRepository(Workflow).createQueryBuilder('workflow')
      .where('workflow.enabled')
      .andWhere(`workflow.triggers @> '[{"source": "schedule"}]'::jsonb`)
      .getMany();
  }

  /** Each workflow's latest tick that made a task. */
  async lastTicks(workflowIds: string[]): Promise<Map<string, Date>> {
    if (workflowIds.length === 0) return new Map();
    const rows: { workflow_id: string; last: Date }[] = await this.db.query(
      `SELECT workflow_id, max(tick_at) AS last FROM ${TICKS} WHERE workflow_id = ANY($1) GROUP BY workflow_id`,
      [workflowIds],
    );
    return new Map(rows.map((row) => [row.workflow_id, new Date(row.last)]));
  }

  /**
   * The precondition of a tick's task (see TasksRepository.insertAfter): the tick's row,
   * stored only if no replica stored it (the primary key) and no later tick of the workflow
   * is stored already (a replica that planned late never makes a tick behind another's).
   */
  tickInsert(workflowId: string, tickAt: Date, taskGuid: string): { text: string; params: unknown[] } {
    return {
      text: `INSERT INTO ${TICKS} (workflow_id, tick_at, task_guid)
             SELECT $1::text, $2::timestamptz, $3::uuid
             WHERE NOT EXISTS (SELECT 1 FROM ${TICKS} WHERE workflow_id = $1::text AND tick_at >= $2::timestamptz)
             ON CONFLICT DO NOTHING RETURNING workflow_id`,
      params: [workflowId, tickAt, taskGuid],
    };
  }

  /** Deletes ticks older than a day that are not their workflow's latest; rows another replica holds are skipped. */
  async prune(): Promise<number> {
    // TypeORM answers a DELETE ... RETURNING with [rows, affected].
    const [rows] = (await this.db.query(
      `DELETE FROM ${TICKS} WHERE (workflow_id, tick_at) IN (
         SELECT s.workflow_id, s.tick_at FROM ${TICKS} s
         WHERE s.created_at < now() - make_interval(hours => $1)
           AND EXISTS (SELECT 1 FROM ${TICKS} n WHERE n.workflow_id = s.workflow_id AND n.tick_at > s.tick_at)
         LIMIT $2 FOR UPDATE SKIP LOCKED)
       RETURNING workflow_id`,
      [KEEP_TICKS_HOURS, PRUNE_BATCH],
    )) as [unknown[], number];
    return rows.length;
  }
}
