import { CreateTasksAndCallbackOutbox1710000000000 } from './1710000000000-CreateTasksAndCallbackOutbox';
import { OrderPendingTasksByArrival1710000000001 } from './1710000000001-OrderPendingTasksByArrival';
import { AddRuntimeOwner1710000000002 } from './1710000000002-AddRuntimeOwner';
import { AddCallbackClaimant1710000000003 } from './1710000000003-AddCallbackClaimant';
import { StatusListIndex1710000000004 } from './1710000000004-StatusListIndex';
import { RetentionIndex1710000000005 } from './1710000000005-RetentionIndex';
import { AddDispatcherReplicas1710000000100 } from './1710000000100-AddDispatcherReplicas';
import { AddTaskClaimant1710000000101 } from './1710000000101-AddTaskClaimant';
import { TaskSkillsAndIsolation1710000000200 } from './1710000000200-TaskSkillsAndIsolation';
import { AddLogsStoredAt1710000000300 } from './1710000000300-AddLogsStoredAt';
import { AddPodAdditions1710000000500 } from './1710000000500-AddPodAdditions';
import { AddSecretEnv1710000000700 } from './1710000000700-AddSecretEnv';
import { AddWarmPools1710000000800 } from './1710000000800-AddWarmPools';
import { AddTraceContext1710000000900 } from './1710000000900-AddTraceContext';

/** Every dispatcher migration, in order. New ones are added at the end. */
export const DISPATCHER_MIGRATIONS: Function[] = [
  CreateTasksAndCallbackOutbox1710000000000,
  OrderPendingTasksByArrival1710000000001,
  AddRuntimeOwner1710000000002,
  AddCallbackClaimant1710000000003,
  StatusListIndex1710000000004,
  RetentionIndex1710000000005,
  AddDispatcherReplicas1710000000100,
  AddTaskClaimant1710000000101,
  TaskSkillsAndIsolation1710000000200,
  AddLogsStoredAt1710000000300,
  AddPodAdditions1710000000500,
  AddSecretEnv1710000000700,
  AddWarmPools1710000000800,
  AddTraceContext1710000000900,
];
