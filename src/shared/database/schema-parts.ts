import { CONTROLLER_ENTITIES } from '../../controller/entities';
import { CONTROLLER_MIGRATIONS } from '../../controller/migrations';
import { DISPATCHER_ENTITIES } from '../../dispatcher/entities';
import { DISPATCHER_MIGRATIONS } from '../../dispatcher/migrations';
import { SchemaRole } from './data-sources';

/**
 * Each role's entities and migrations, listed explicitly: in the `all` role both data
 * sources live in one process, and discovery by registration would mix them.
 */
export const SCHEMA_PARTS: Record<SchemaRole, { entities: Function[]; migrations: Function[] }> = {
  controller: { entities: CONTROLLER_ENTITIES, migrations: CONTROLLER_MIGRATIONS },
  dispatcher: { entities: DISPATCHER_ENTITIES, migrations: DISPATCHER_MIGRATIONS },
};
