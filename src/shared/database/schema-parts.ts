import { CONTROLLER_ENTITIES } from '../../controller/entities';
import { CONTROLLER_MIGRATIONS } from '../../controller/migrations';
import { MIGRATION_CHECKSUMS as CONTROLLER_MIGRATION_CHECKSUMS } from '../../controller/migrations/checksums';
import { DISPATCHER_ENTITIES } from '../../dispatcher/entities';
import { DISPATCHER_MIGRATIONS } from '../../dispatcher/migrations';
import { MIGRATION_CHECKSUMS as DISPATCHER_MIGRATION_CHECKSUMS } from '../../dispatcher/migrations/checksums';
import { SchemaRole } from './data-sources';

/**
 * Each role's entities and migrations, listed explicitly: in the `all` role both data
 * sources live in one process, and discovery by registration would mix them. `checksums` is
 * each role's committed list of its migration files' SHA-256 (scripts/migration-checksums.mjs).
 */
export const SCHEMA_PARTS: Record<SchemaRole, { entities: Function[]; migrations: Function[]; checksums: Record<string, string> }> = {
  controller: { entities: CONTROLLER_ENTITIES, migrations: CONTROLLER_MIGRATIONS, checksums: CONTROLLER_MIGRATION_CHECKSUMS },
  dispatcher: { entities: DISPATCHER_ENTITIES, migrations: DISPATCHER_MIGRATIONS, checksums: DISPATCHER_MIGRATION_CHECKSUMS },
};
