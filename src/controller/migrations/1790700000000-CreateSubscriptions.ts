import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Outbound event subscriptions and their delivery outbox. The fan-out is a statement
 * trigger on `events`: every statement that writes events (and with them the task change
 * they report) writes one delivery per matching enabled subscription in the same
 * statement, so the change, its event and its deliveries commit together or not at all,
 * whichever replica wrote them. The payload is built there too, so a delivery outlives
 * the event window.
 */
export class CreateSubscriptions1790700000000 implements MigrationInterface {
  name = 'CreateSubscriptions1790700000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`CREATE TABLE "controller"."subscriptions" (
      "id" uuid NOT NULL DEFAULT gen_random_uuid(),
      "url" text NOT NULL,
      "event_types" text[] NOT NULL,
      "filter" jsonb NOT NULL DEFAULT '{}',
      "description" text NOT NULL DEFAULT '',
      "enabled" boolean NOT NULL DEFAULT true,
      "disabled_reason" text,
      "owner_client_id" text,
      "secret_sealed" text NOT NULL,
      "previous_secret_sealed" text,
      "previous_secret_expires_at" timestamptz,
      "failing_since" timestamptz,
      "created_at" timestamptz NOT NULL DEFAULT now(),
      "updated_at" timestamptz NOT NULL DEFAULT now(),
      CONSTRAINT "subscriptions_pkey" PRIMARY KEY ("id"))`);
    await runner.query(`CREATE INDEX "subscriptions_created_idx" ON "controller"."subscriptions" ("created_at", "id")`);
    await runner.query(`CREATE INDEX "subscriptions_owner_idx" ON "controller"."subscriptions" ("owner_client_id", "created_at", "id")`);
    await runner.query(`CREATE TABLE "controller"."subscription_deliveries" (
      "id" uuid NOT NULL DEFAULT gen_random_uuid(),
      "subscription_id" uuid NOT NULL,
      "event_id" bigint NOT NULL,
      "event_type" text NOT NULL,
      "payload" jsonb NOT NULL,
      "state" text NOT NULL DEFAULT 'pending',
      "attempt_count" integer NOT NULL DEFAULT 0,
      "next_attempt_at" timestamptz NOT NULL DEFAULT now(),
      "claimed_by" text,
      "last_status" integer,
      "last_error" text,
      "attempts" jsonb NOT NULL DEFAULT '[]',
      "created_at" timestamptz NOT NULL DEFAULT now(),
      "delivered_at" timestamptz,
      CONSTRAINT "subscription_deliveries_pkey" PRIMARY KEY ("id"),
      CONSTRAINT "subscription_deliveries_subscription_fkey" FOREIGN KEY ("subscription_id")
        REFERENCES "controller"."subscriptions" ("id") ON DELETE CASCADE)`);
    await runner.query(`CREATE UNIQUE INDEX "subscription_deliveries_event_idx" ON "controller"."subscription_deliveries" ("subscription_id", "event_id")`);
    await runner.query(`CREATE INDEX "subscription_deliveries_due_idx" ON "controller"."subscription_deliveries" ("subscription_id", "next_attempt_at") WHERE state = 'pending'`);
    await runner.query(`CREATE INDEX "subscription_deliveries_list_idx" ON "controller"."subscription_deliveries" ("subscription_id", "created_at", "id")`);
    // The body a subscription receives for an event: `{type, timestamp, data}`, `data` as the event stream shows it.
    await runner.query(`CREATE FUNCTION "controller"."event_delivery_payload"(kind text, id bigint, created_at timestamptz, data jsonb)
      RETURNS jsonb LANGUAGE sql STABLE AS $$
        SELECT jsonb_build_object(
          'type', kind,
          'timestamp', to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
          'data', jsonb_build_object('id', id, 'kind', kind, 'at', to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) || data)
      $$`);
    // Whether a subscription (enabled or not) asks for an event: its type, then the filter's workflow and status.
    await runner.query(`CREATE FUNCTION "controller"."subscription_matches"(event_types text[], filter jsonb, kind text, data jsonb)
      RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
        SELECT kind = ANY (event_types)
          AND (filter->>'workflow_id' IS NULL OR filter->>'workflow_id' = data->>'workflow')
          AND (filter->'status' IS NULL OR jsonb_exists(filter->'status', data->>'status'))
      $$`);
    await runner.query(`CREATE FUNCTION "controller"."fan_out_events"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO "controller"."subscription_deliveries" (subscription_id, event_id, event_type, payload)
        SELECT s.id, e.id, e.kind, "controller"."event_delivery_payload"(e.kind, e.id, e.created_at, e.data)
        FROM new_events e
        JOIN "controller"."subscriptions" s ON s.enabled AND "controller"."subscription_matches"(s.event_types, s.filter, e.kind, e.data);
        RETURN NULL;
      END $$`);
    await runner.query(`CREATE TRIGGER "events_fan_out" AFTER INSERT ON "controller"."events"
      REFERENCING NEW TABLE AS new_events FOR EACH STATEMENT EXECUTE FUNCTION "controller"."fan_out_events"()`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`DROP TRIGGER "events_fan_out" ON "controller"."events"`);
    await runner.query(`DROP FUNCTION "controller"."fan_out_events"()`);
    await runner.query(`DROP FUNCTION "controller"."subscription_matches"(text[], jsonb, text, jsonb)`);
    await runner.query(`DROP FUNCTION "controller"."event_delivery_payload"(text, bigint, timestamptz, jsonb)`);
    await runner.query(`DROP TABLE "controller"."subscription_deliveries"`);
    await runner.query(`DROP TABLE "controller"."subscriptions"`);
  }
}
