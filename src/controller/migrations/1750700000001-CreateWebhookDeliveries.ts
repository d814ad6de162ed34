import { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateWebhookDeliveries1750700000001 implements MigrationInterface {
  name = 'CreateWebhookDeliveries1750700000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE "controller"."webhook_deliveries" (
        "id" uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        "source" text NOT NULL,
        "event" text,
        "delivery_id" text,
        "dedup_key" text,
        "verified" boolean NOT NULL DEFAULT false,
        "workflow_id" text,
        "task_guid" uuid,
        "outcome" text NOT NULL
          CHECK ("outcome" IN ('received', 'routed', 'ignored', 'duplicate', 'failed', 'rejected', 'challenge')),
        "status_code" integer,
        "error" text,
        "payload" text,
        "payload_size" integer NOT NULL DEFAULT 0,
        "payload_truncated" boolean NOT NULL DEFAULT false,
        "replay_of" uuid REFERENCES "controller"."webhook_deliveries" ("id") ON DELETE SET NULL,
        "received_at" timestamptz NOT NULL DEFAULT now(),
        "finished_at" timestamptz
      )`);
    // The durable record of "seen before": one accepted delivery per sender delivery id.
    await queryRunner.query(
      `CREATE UNIQUE INDEX "webhook_deliveries_dedup_key_uq" ON "controller"."webhook_deliveries" ("dedup_key") WHERE "dedup_key" IS NOT NULL`,
    );
    await queryRunner.query(`CREATE INDEX "webhook_deliveries_received_idx" ON "controller"."webhook_deliveries" ("received_at" DESC)`);
    await queryRunner.query(`CREATE INDEX "webhook_deliveries_workflow_idx" ON "controller"."webhook_deliveries" ("workflow_id")`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "controller"."webhook_deliveries"`);
  }
}
