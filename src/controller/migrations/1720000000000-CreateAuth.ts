import { MigrationInterface, QueryRunner } from 'typeorm';

/** Operator tokens (CLI), OAuth clients and their access tokens; secrets only as hashes. */
export class CreateAuth1720000000000 implements MigrationInterface {
  name = 'CreateAuth1720000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE "controller"."operator_tokens" (
        "id" uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        "name" text NOT NULL,
        "token_hash" text NOT NULL,
        "created_at" timestamptz NOT NULL DEFAULT now(),
        "last_used_at" timestamptz,
        "revoked_at" timestamptz,
        CONSTRAINT "operator_tokens_token_hash_key" UNIQUE ("token_hash")
      )`);
    // A name picks out one live token (for `token revoke <name>`); revoked names can be reused.
    await queryRunner.query(`
      CREATE UNIQUE INDEX "operator_tokens_live_name_key"
        ON "controller"."operator_tokens" ("name") WHERE "revoked_at" IS NULL`);
    await queryRunner.query(`
      CREATE TABLE "controller"."oauth_clients" (
        "id" uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        "name" text NOT NULL,
        "scopes" text[] NOT NULL,
        "secret_hash" text NOT NULL,
        "created_at" timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query(`
      CREATE TABLE "controller"."oauth_access_tokens" (
        "id" uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        "token_hash" text NOT NULL,
        "client_id" uuid NOT NULL REFERENCES "controller"."oauth_clients" ("id") ON DELETE CASCADE,
        "scopes" text[] NOT NULL,
        "expires_at" timestamptz NOT NULL,
        "created_at" timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT "oauth_access_tokens_token_hash_key" UNIQUE ("token_hash")
      )`);
    await queryRunner.query(`
      CREATE INDEX "oauth_access_tokens_client_id_idx" ON "controller"."oauth_access_tokens" ("client_id")`);
    await queryRunner.query(`
      CREATE INDEX "oauth_access_tokens_expires_at_idx" ON "controller"."oauth_access_tokens" ("expires_at")`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "controller"."oauth_access_tokens"`);
    await queryRunner.query(`DROP TABLE "controller"."oauth_clients"`);
    await queryRunner.query(`DROP TABLE "controller"."operator_tokens"`);
  }
}
