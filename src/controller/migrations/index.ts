import { CreateAuth1720000000000 } from './1720000000000-CreateAuth';
import { CreateDispatchers1730500000000 } from './1730500000000-CreateDispatchers';
import { CreateTasks1730500000001 } from './1730500000001-CreateTasks';
import { CreateSkills1740000000000 } from './1740000000000-CreateSkills';
import { CreateWorkflows1750700000000 } from './1750700000000-CreateWorkflows';
import { CreateWebhookDeliveries1750700000001 } from './1750700000001-CreateWebhookDeliveries';
import { TaskPipeline1760000000000 } from './1760000000000-TaskPipeline';
import { KeysetListIndexes1770000000000 } from './1770000000000-KeysetListIndexes';
import { RetentionIndexes1770000000001 } from './1770000000001-RetentionIndexes';
import { TaskIsolation1780100000000 } from './1780100000000-TaskIsolation';
import { CreateEvents1780200000000 } from './1780200000000-CreateEvents';
import { AddPodAdditions1780500000000 } from './1780500000000-AddPodAdditions';
import { CreateScheduleTicks1790300000000 } from './1790300000000-CreateScheduleTicks';
import { SchedulingQueue1790100000000 } from './1790100000000-SchedulingQueue';
import { TaskRetries1790200000000 } from './1790200000000-TaskRetries';
import { LedgerFilterIndexes1790600000000 } from './1790600000000-LedgerFilterIndexes';
import { CreateSubscriptions1790700000000 } from './1790700000000-CreateSubscriptions';
import { CreateAuditTrail1790800000000 } from './1790800000000-CreateAuditTrail';
import { CreateStreamLeases1791000000000 } from './1791000000000-CreateStreamLeases';
import { TakeStreamLease1791000000001 } from './1791000000001-TakeStreamLease';
import { AddDispatcherWarmPools1791100002600 } from './1791100002600-AddDispatcherWarmPools';
import { DispatcherBinding1790500000000 } from './1790500000000-DispatcherBinding';
import { AddSecretEnv1790500000001 } from './1790500000001-AddSecretEnv';
import { EventsByTask1790500000002 } from './1790500000002-EventsByTask';
import { AddTraceContext1790900000000 } from './1790900000000-AddTraceContext';

/** Every controller migration, in order. New ones are added at the end. */
export const CONTROLLER_MIGRATIONS: Function[] = [
  CreateAuth1720000000000,
  CreateDispatchers1730500000000,
  CreateTasks1730500000001,
  CreateSkills1740000000000,
  CreateWorkflows1750700000000,
  CreateWebhookDeliveries1750700000001,
  TaskPipeline1760000000000,
  KeysetListIndexes1770000000000,
  RetentionIndexes1770000000001,
  TaskIsolation1780100000000,
  CreateEvents1780200000000,
  AddPodAdditions1780500000000,
  SchedulingQueue1790100000000,
  TaskRetries1790200000000,
  CreateScheduleTicks1790300000000,
  DispatcherBinding1790500000000,
  AddSecretEnv1790500000001,
  EventsByTask1790500000002,
  LedgerFilterIndexes1790600000000,
  CreateSubscriptions1790700000000,
  CreateAuditTrail1790800000000,
  AddTraceContext1790900000000,
  CreateStreamLeases1791000000000,
  TakeStreamLease1791000000001,
  AddDispatcherWarmPools1791100002600,
];
