import { Attributes } from '@opentelemetry/api';

/**
 * The controller's queue as a messaging destination (OpenTelemetry messaging conventions):
 * storing a task is `send`, the dispatch loop's claim is `receive`, handing one task to a
 * dispatcher is `process`. See docs/tracing.md.
 */
export const TASK_QUEUE = 'controller.tasks';

export function queueAttributes(operation: 'send' | 'receive' | 'process', extra: Attributes = {}): Attributes {
  return {
    'messaging.system': 'postgresql',
    'messaging.destination.name': TASK_QUEUE,
    'messaging.operation.type': operation,
    'messaging.operation.name': operation,
    ...extra,
  };
}

/** The documented `task.*` attributes; absent values are left out. */
export function taskAttributes(task: {
  guid?: string;
  taskId?: string;
  attempt?: number;
  workflowId?: string | null;
  agentImage?: string;
  runtimeType?: string;
  dispatcher?: string | null;
  status?: string;
}): Attributes {
  const attributes: Attributes = {};
  if (task.guid) attributes['task.guid'] = task.guid;
  if (task.taskId) attributes['task.dispatcher_task_id'] = task.taskId;
  if (task.attempt !== undefined) attributes['task.attempt'] = task.attempt;
  if (task.workflowId) attributes['task.workflow_id'] = task.workflowId;
  if (task.agentImage) attributes['task.agent_image'] = task.agentImage;
  if (task.runtimeType) attributes['task.runtime'] = task.runtimeType;
  if (task.dispatcher) attributes['task.dispatcher'] = task.dispatcher;
  if (task.status) attributes['task.status'] = task.status;
  return attributes;
}
