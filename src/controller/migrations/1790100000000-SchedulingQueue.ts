import { MigrationInterface, QueryRunner } from 'typeorm';

const HOLDS_SLOT = `("status" IN ('dispatched', 'running') OR ("status" = 'pending' AND "dispatch_claimed_until" IS NOT NULL))`;

/**
 * The controller's queue (issue 21, items 0 to 3): a task's priority, concurrency key with
 * its limit and strategy, fairness group and weight, and its place in the group's turn
 * (`fair_tag`, set by a trigger at insert: see `scheduling/fair-share.ts`). Workflows take
 * `concurrency` and `weight`.
 */
export class SchedulingQueue1790100000000 implements MigrationInterface {
  name = 'SchedulingQueue1790100000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE "controller"."tasks"
      ADD COLUMN "priority" integer NOT NULL DEFAULT 0,
      ADD COLUMN "concurrency_key" text,
      ADD COLUMN "concurrency_limit" integer,
      ADD COLUMN "concurrency_strategy" text,
      ADD COLUMN "fairness_group" text NOT NULL DEFAULT '',
      ADD COLUMN "fairness_weight" integer NOT NULL DEFAULT 1,
      ADD COLUMN "fair_tag" double precision NOT NULL DEFAULT 0,
      ADD COLUMN "superseded_by" uuid,
      ADD CONSTRAINT "tasks_priority_check" CHECK ("priority" BETWEEN -1000 AND 1000),
      ADD CONSTRAINT "tasks_fairness_weight_check" CHECK ("fairness_weight" BETWEEN 1 AND 100)`);
    await runner.query(`UPDATE "controller"."tasks" SET "fairness_group" = COALESCE("workflow_id", "created_by", '') WHERE "status" = 'pending'`);
    await runner.query(`CREATE INDEX "tasks_claim_order_idx" ON "controller"."tasks" ("priority" DESC, "fair_tag", "created_at", "guid") WHERE "status" = 'pending'`);
    await runner.query(`CREATE INDEX "tasks_fairness_tail_idx" ON "controller"."tasks" ("fairness_group", "priority", "fair_tag") WHERE "status" = 'pending'`);
    // What holds a slot: dispatched or running, or claimed by a dispatch round (pending with a claim).
    await runner.query(`CREATE INDEX "tasks_concurrency_held_idx" ON "controller"."tasks" ("concurrency_key") WHERE ${HOLDS_SLOT} AND "concurrency_key" IS NOT NULL`);
    await runner.query(`CREATE INDEX "tasks_dispatcher_held_idx" ON "controller"."tasks" ("dispatcher_guid") WHERE ${HOLDS_SLOT} AND "dispatcher_guid" IS NOT NULL`);
    await runner.query(`CREATE INDEX "tasks_superseded_open_idx" ON "controller"."tasks" ("superseded_by")
      WHERE "superseded_by" IS NOT NULL AND "status" IN ('dispatched', 'running')`);
    // The queue's virtual time per priority: the largest turn a claim has taken (start-time fair queuing).
    await runner.query(`CREATE TABLE "controller"."queue_clock" (
      "priority" integer NOT NULL,
      "now_tag" double precision NOT NULL DEFAULT 0,
      CONSTRAINT "queue_clock_pkey" PRIMARY KEY ("priority"))`);
    // A new pending task joins its group's turn: after the group's last pending task of its
    // priority, and never before the queue's virtual time at that priority, one step of
    // 1/weight further. A primary-key read and one probe of the end of the group's range.
    await runner.query(`CREATE FUNCTION "controller"."task_fair_tag"() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        queue_now double precision;
        group_tail double precision;
      BEGIN
        IF NEW.status <> 'pending' THEN
          RETURN NEW;
        END IF;
        SELECT c.now_tag INTO queue_now FROM "controller"."queue_clock" c WHERE c.priority = NEW.priority;
        SELECT t.fair_tag INTO group_tail FROM "controller"."tasks" t
          WHERE t.status = 'pending' AND t.fairness_group = NEW.fairness_group AND t.priority = NEW.priority
          ORDER BY t.fairness_group DESC, t.priority DESC, t.fair_tag DESC LIMIT 1;
        NEW.fair_tag := GREATEST(COALESCE(queue_now, 0), COALESCE(group_tail, 0)) + 1.0 / GREATEST(NEW.fairness_weight, 1);
        RETURN NEW;
      END $$`);
    await runner.query(`CREATE TRIGGER "tasks_fair_tag" BEFORE INSERT ON "controller"."tasks" FOR EACH ROW EXECUTE FUNCTION "controller"."task_fair_tag"()`);
    await runner.query(`ALTER TABLE "controller"."workflows"
      ADD COLUMN "concurrency" jsonb,
      ADD COLUMN "weight" integer NOT NULL DEFAULT 1,
      ADD CONSTRAINT "workflows_weight_check" CHECK ("weight" BETWEEN 1 AND 100)`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE "controller"."workflows" DROP CONSTRAINT "workflows_weight_check", DROP COLUMN "weight", DROP COLUMN "concurrency"`);
    await runner.query(`DROP TRIGGER "tasks_fair_tag" ON "controller"."tasks"`);
    await runner.query(`DROP FUNCTION "controller"."task_fair_tag"()`);
    await runner.query(`DROP TABLE "controller"."queue_clock"`);
    for (const index of ['tasks_superseded_open_idx', 'tasks_dispatcher_held_idx', 'tasks_concurrency_held_idx', 'tasks_fairness_tail_idx', 'tasks_claim_order_idx']) {
      await runner.query(`DROP INDEX "controller"."${index}"`);
    }
    await runner.query(`ALTER TABLE "controller"."tasks"
      DROP CONSTRAINT "tasks_fairness_weight_check", DROP CONSTRAINT "tasks_priority_check",
      DROP COLUMN "superseded_by", DROP COLUMN "fair_tag", DROP COLUMN "fairness_weight", DROP COLUMN "fairness_group",
      DROP COLUMN "concurrency_strategy", DROP COLUMN "concurrency_limit", DROP COLUMN "concurrency_key", DROP COLUMN "priority"`);
  }
}
