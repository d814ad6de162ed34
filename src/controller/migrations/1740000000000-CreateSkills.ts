import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Skills and their package versions. A version row is immutable (a trigger refuses
 * updates); `latest_version` on the skill is advanced under a row lock by each upload,
 * and the unique (skill, number) and (skill, hash) pairs back that up.
 */
export class CreateSkills1740000000000 implements MigrationInterface {
  name = 'CreateSkills1740000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE "controller"."skills" (
        "guid" uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        "name" varchar(100) NOT NULL,
        "slug" varchar(100) NOT NULL,
        "category" varchar(20) NOT NULL,
        "description" text NOT NULL DEFAULT '',
        "latest_version" integer,
        "created_at" timestamptz NOT NULL DEFAULT now(),
        "updated_at" timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT "skills_slug_key" UNIQUE ("slug"),
        CONSTRAINT "skills_category_check"
          CHECK ("category" IN ('tool', 'prompt', 'knowledge', 'workflow', 'integration', 'other'))
      )`);
    await queryRunner.query(`
      CREATE TABLE "controller"."skill_versions" (
        "guid" uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        "skill_guid" uuid NOT NULL REFERENCES "controller"."skills" ("guid") ON DELETE CASCADE,
        "version_number" integer NOT NULL CHECK ("version_number" >= 1),
        "content_hash" char(64) NOT NULL,
        "size_bytes" bigint NOT NULL CHECK ("size_bytes" >= 0),
        "storage_ref" varchar(200) NOT NULL,
        "manifest_name" text,
        "manifest_description" text,
        "created_at" timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT "skill_versions_number_key" UNIQUE ("skill_guid", "version_number"),
        CONSTRAINT "skill_versions_hash_key" UNIQUE ("skill_guid", "content_hash")
      )`);
    await queryRunner.query(`CREATE INDEX "skill_versions_content_hash_idx" ON "controller"."skill_versions" ("content_hash")`);
    await queryRunner.query(`
      CREATE FUNCTION "controller"."skill_versions_immutable"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'skill versions are immutable';
      END
      $$`);
    await queryRunner.query(`
      CREATE TRIGGER "skill_versions_no_update" BEFORE UPDATE ON "controller"."skill_versions"
      FOR EACH ROW EXECUTE FUNCTION "controller"."skill_versions_immutable"()`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "controller"."skill_versions"`);
    await queryRunner.query(`DROP FUNCTION "controller"."skill_versions_immutable"()`);
    await queryRunner.query(`DROP TABLE "controller"."skills"`);
  }
}
