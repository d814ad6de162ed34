import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The audit trail: one row per operator or OAuth client request that changes state,
 * refusals included, and the operator token commands of the CLI (no HTTP status). Listed newest first by `(at, id)`; each filter of the list has an
 * index in that order, so a filtered page is one bounded index walk.
 */
export class CreateAuditTrail1790800000000 implements MigrationInterface {
  name = 'CreateAuditTrail1790800000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`CREATE TABLE "controller"."audit_entries" (
      "id" uuid NOT NULL DEFAULT gen_random_uuid(),
      "at" timestamptz NOT NULL DEFAULT now(),
      "actor_kind" text NOT NULL,
      "actor_id" text NOT NULL,
      "actor_name" text NOT NULL,
      "action" text NOT NULL,
      "resource_type" text NOT NULL,
      "resource_id" text,
      "outcome" text NOT NULL,
      "status_code" integer,
      "remote_addr" text,
      "details" jsonb NOT NULL DEFAULT '{}',
      CONSTRAINT "audit_entries_pkey" PRIMARY KEY ("id"),
      CONSTRAINT "audit_entries_actor_kind_check" CHECK ("actor_kind" IN ('operator', 'oauth_client')),
      CONSTRAINT "audit_entries_outcome_check" CHECK ("outcome" IN ('succeeded', 'refused', 'failed')))`);
    await runner.query(`CREATE INDEX "audit_entries_at_idx" ON "controller"."audit_entries" ("at", "id")`);
    await runner.query(`CREATE INDEX "audit_entries_actor_at_idx" ON "controller"."audit_entries" ("actor_name", "at", "id")`);
    await runner.query(`CREATE INDEX "audit_entries_action_at_idx" ON "controller"."audit_entries" ("action", "at", "id")`);
    await runner.query(`CREATE INDEX "audit_entries_resource_at_idx" ON "controller"."audit_entries" ("resource_type", "resource_id", "at", "id")`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`DROP TABLE "controller"."audit_entries"`);
  }
}
