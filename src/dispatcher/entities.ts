import { CallbackOutboxEntity } from './callbacks/callback-outbox.entity';
import { PoolAgentEntity } from './pools/pool-agent.entity';
import { DispatcherReplicaEntity } from './replicas/dispatcher-replica.entity';
import { TaskEntity } from './tasks/task.entity';

/** Every dispatcher entity; the dispatcher's data source loads exactly these. */
export const DISPATCHER_ENTITIES: Function[] = [TaskEntity, CallbackOutboxEntity, DispatcherReplicaEntity, PoolAgentEntity];
