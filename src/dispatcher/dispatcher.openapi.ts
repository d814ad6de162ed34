import {
  anyObject, integer, list, nullableInteger, nullableText, nullableTime, record, ref, SchemaObject, stringMap, text, time, uuid,
} from '../shared/http/openapi-schema';
import { TASK_STATUSES } from './tasks/task-state';

/** `{ok: true, data: <schema>}`, the dispatcher's envelope. */
function envelope(data: SchemaObject): SchemaObject {
  return record({ ok: { type: 'boolean', enum: [true] }, data });
}

/** The dispatcher's answers, as components of its OpenAPI document (referenced by name in the decorators). */
export const DISPATCHER_SCHEMAS: Record<string, SchemaObject> = {
  DispatcherTask: record({
    task_id: uuid(),
    agent_image: text(),
    runtime_target: record({ type: text(), namespace: nullableText() }),
    resources: anyObject({ nullable: true }),
    env: stringMap(),
    secret_env: { ...stringMap(), description: 'References ("<secret>/<key>") only; values are never answered' },
    ports: list(anyObject()),
    brief_key: nullableText(),
    callback_url: text(),
    timeout_seconds: integer(),
    status: text({ enum: [...TASK_STATUSES] }),
    created_at: time(),
    started_at: nullableTime(),
    finished_at: nullableTime(),
    exit_code: nullableInteger({ description: '-1 when a timed-out agent\'s code is unknown' }),
    result_key: nullableText(),
    result_metadata: anyObject({ nullable: true }),
    error_message: nullableText(),
    progress: record({
      percentage: nullableInteger({ minimum: 0, maximum: 100 }),
      message: nullableText(),
      data: anyObject({ nullable: true }),
      updated_at: nullableTime(),
    }),
    runtime: record({ backend: nullableText(), ref: nullableText() }),
    warm: { type: 'boolean', description: 'Started on an agent of a warm pool' },
    pool: nullableText({ description: 'The warm pool whose agent took the task; null when it started cold' }),
    callback: record({
      state: text({ enum: ['pending', 'delivered', 'failed'] }),
      attempts: integer({ minimum: 0 }),
      last_error: nullableText(),
    }),
  }),
  DispatcherTaskAnswer: envelope(ref('DispatcherTask')),
  DispatcherTaskList: envelope(record({ tasks: list(ref('DispatcherTask')), total: integer({ minimum: 0 }) })),
  AgentCheckinAnswer: envelope(record({ brief_key: nullableText(), env: stringMap() })),
  AgentClaimAnswer: envelope(record({ task_id: uuid(), agent_key: text({ description: 'The per-task key for check-in and every later call' }) })),
  AgentOk: record({ ok: { type: 'boolean', enum: [true] } }),
  AgentObjectStored: envelope(record({ key: text(), size: integer({ minimum: 0 }) })),
};
