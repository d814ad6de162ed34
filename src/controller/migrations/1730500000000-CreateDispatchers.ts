import { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateDispatchers1730500000000 implements MigrationInterface {
  name = 'CreateDispatchers1730500000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE "controller"."dispatchers" (
        "guid" uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        "name" text NOT NULL,
        "slug" text NOT NULL,
        "endpoint_url" text NOT NULL,
        "cloud" text NOT NULL DEFAULT '',
        "backends" jsonb NOT NULL DEFAULT '[]',
        "labels" jsonb NOT NULL DEFAULT '{}',
        "heartbeat_interval_seconds" integer NOT NULL,
        "api_key_encrypted" text,
        "active_tasks" integer NOT NULL DEFAULT 0,
        "capacity" integer,
        "last_heartbeat_at" timestamptz,
        "created_at" timestamptz NOT NULL DEFAULT now(),
        "updated_at" timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT "dispatchers_name_key" UNIQUE ("name"),
        CONSTRAINT "dispatchers_slug_key" UNIQUE ("slug")
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "controller"."dispatchers"`);
  }
}
