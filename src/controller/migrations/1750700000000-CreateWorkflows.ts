import { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateWorkflows1750700000000 implements MigrationInterface {
  name = 'CreateWorkflows1750700000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE "controller"."workflows" (
        "id" text PRIMARY KEY,
        "name" text NOT NULL,
        "enabled" boolean NOT NULL DEFAULT true,
        "priority" integer NOT NULL DEFAULT 100,
        "triggers" jsonb NOT NULL DEFAULT '[]',
        "task_template" jsonb NOT NULL,
        "created_at" timestamptz NOT NULL DEFAULT now(),
        "updated_at" timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query(
      `CREATE INDEX "workflows_routing_idx" ON "controller"."workflows" ("priority", "created_at") WHERE "enabled"`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "controller"."workflows"`);
  }
}
