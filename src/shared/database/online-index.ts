import type { QueryRunner } from 'typeorm';

/** An index a migration builds without blocking writes: its name and the rest of its CREATE. */
export interface OnlineIndex {
  name: string;
  /** `ON "schema"."table" (...) [WHERE ...]` */
  on: string;
}

/**
 * Index changes for tables that may be large and busy: `CREATE/DROP INDEX CONCURRENTLY`, so
 * ingest and callbacks keep writing while a million-row table is indexed. A migration that
 * uses these sets `transaction = false` (CONCURRENTLY cannot run in a transaction; inside one,
 * as TypeORM's revert always runs, the plain forms are used). An index left invalid by a build
 * that was interrupted is dropped and built again.
 */
export async function createIndexOnline(runner: QueryRunner, schema: string, index: OnlineIndex): Promise<void> {
  const [existing] = (await runner.query(
    `SELECT i.indisvalid AS valid FROM pg_index i
       JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relname = $2`,
    [schema, index.name],
  )) as { valid: boolean }[];
  if (existing?.valid) return;
  if (existing) await dropIndexOnline(runner, schema, index.name);
  await runner.query(`CREATE INDEX ${concurrently(runner)} "${index.name}" ${index.on}`);
}

export async function dropIndexOnline(runner: QueryRunner, schema: string, name: string): Promise<void> {
  await runner.query(`DROP INDEX ${concurrently(runner)} IF EXISTS "${schema}"."${name}"`);
}

function concurrently(runner: QueryRunner): string {
  return runner.isTransactionActive ? '' : 'CONCURRENTLY';
}
