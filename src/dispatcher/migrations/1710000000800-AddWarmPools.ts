import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Warm pools: agents started before their task, each given at most one task. A task started
 * on one names its pool and agent; the agent's runtime key is the agent id, not the task id.
 */
export class AddWarmPools1710000000800 implements MigrationInterface {
  name = 'AddWarmPools1710000000800';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`CREATE TABLE "dispatcher"."pool_agents" (
      "agent_id" uuid NOT NULL,
      "pool" text NOT NULL,
      "backend" text NOT NULL,
      "state" text NOT NULL DEFAULT 'idle',
      "task_id" uuid,
      "runtime_ref" text,
      "owner" text NOT NULL,
      "created_at" timestamptz NOT NULL DEFAULT now(),
      "ready_at" timestamptz,
      "claimed_at" timestamptz,
      "gone_at" timestamptz,
      CONSTRAINT "pool_agents_pkey" PRIMARY KEY ("agent_id"),
      CONSTRAINT "pool_agents_state_check" CHECK ("state" IN ('idle', 'claimed', 'gone')),
      CONSTRAINT "pool_agents_task_unique" UNIQUE ("task_id")
    )`);
    await runner.query(`CREATE INDEX "pool_agents_idle" ON "dispatcher"."pool_agents" ("pool", "created_at") WHERE "state" = 'idle'`);
    await runner.query(`CREATE INDEX "pool_agents_live_owner" ON "dispatcher"."pool_agents" ("owner", "pool") WHERE "state" <> 'gone'`);
    await runner.query(`ALTER TABLE "dispatcher"."tasks" ADD COLUMN "pool" text, ADD COLUMN "pool_agent_id" uuid`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE "dispatcher"."tasks" DROP COLUMN "pool_agent_id", DROP COLUMN "pool"`);
    await runner.query(`DROP TABLE "dispatcher"."pool_agents"`);
  }
}
