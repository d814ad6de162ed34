import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The skills pinned on a task (which the agent may download) and its isolation: runtime
 * class, network egress and security relaxations; null takes the dispatcher's defaults.
 */
export class TaskSkillsAndIsolation1710000000200 implements MigrationInterface {
  name = 'TaskSkillsAndIsolation1710000000200';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE "dispatcher"."tasks" ADD COLUMN "skills" jsonb NOT NULL DEFAULT '[]', ADD COLUMN "runtime_class" text, ADD COLUMN "network" jsonb, ADD COLUMN "security" jsonb`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE "dispatcher"."tasks" DROP COLUMN "security", DROP COLUMN "network", DROP COLUMN "runtime_class", DROP COLUMN "skills"`);
  }
}
