import { anyObject, bool, integer, list, nullableInteger, nullableText, nullableTime, page, record, ref, SchemaObject, text, time, uuid } from '../../shared/http/openapi-schema';
import { DELIVERY_STATES, SUBSCRIPTION_EVENT_TYPES } from './subscriptions.entity';

/** The answers of /api/v1/subscriptions/, as components of the controller's OpenAPI document. */
export const SUBSCRIPTION_SCHEMAS: Record<string, SchemaObject> = {
  Subscription: record({
    id: uuid(),
    url: text({ format: 'uri' }),
    event_types: list(text({ enum: [...SUBSCRIPTION_EVENT_TYPES] })),
    filter: record({ workflow_id: text(), status: { oneOf: [text(), list(text())] } as SchemaObject }, ['workflow_id', 'status']),
    description: text(),
    enabled: bool(),
    disabled_reason: nullableText({ description: 'gone (the endpoint answered 410), failing (5 days of failed attempts) or operator' }),
    previous_secret_expires_at: nullableTime(),
    created_at: time(),
    updated_at: time(),
  }),
  SubscriptionWithSecret: {
    allOf: [ref('Subscription'), record({ secret: text({ description: 'whsec_<base64>: shown in this answer only', pattern: '^whsec_' }) })],
  },
  SubscriptionPage: page('Subscription', true),
  SubscriptionDeliveryAttempt: record({
    at: time(),
    status_code: nullableInteger(),
    duration_ms: integer({ minimum: 0 }),
    response: nullableText({ description: 'The first 4 KiB of the answer' }),
    error: nullableText(),
  }),
  SubscriptionDelivery: record({
    id: uuid(),
    subscription_id: uuid(),
    event_id: integer(),
    event_type: text(),
    status: text({ enum: [...DELIVERY_STATES] }),
    attempt_count: integer({ minimum: 0 }),
    next_attempt_at: nullableTime(),
    last_status: nullableInteger(),
    created_at: time(),
    delivered_at: nullableTime(),
    payload: record({ type: text(), timestamp: time(), data: anyObject() }),
    attempts: list(ref('SubscriptionDeliveryAttempt')),
  }),
  SubscriptionDeliveryPage: page('SubscriptionDelivery', true),
  SubscriptionReplay: record({ replayed: integer({ minimum: 0 }) }),
};
