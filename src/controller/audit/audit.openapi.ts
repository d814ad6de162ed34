import { anyObject, nullableText, page, record, SchemaObject, text, time, uuid } from '../../shared/http/openapi-schema';
import { AUDIT_ACTOR_KINDS, AUDIT_OUTCOMES } from './audit.entity';

/** The answers of /api/v1/audit/, as components of the controller's OpenAPI document. */
export const AUDIT_SCHEMAS: Record<string, SchemaObject> = {
  AuditEntry: record({
    id: uuid(),
    at: time(),
    actor: record({
      kind: text({ enum: [...AUDIT_ACTOR_KINDS] }),
      name: text({ description: "The operator token's name, or the OAuth client's client_id" }),
    }),
    action: text({ description: 'The OpenAPI operation id, dotted: tasks.cancel, oauth.createClient, ...' }),
    resource_type: text({ description: 'task, workflow, subscription, skill, dispatcher, oauth_client, webhook_delivery' }),
    resource_id: nullableText({ description: 'From the path, or the answer of a creation; null when neither names it' }),
    outcome: text({ enum: [...AUDIT_OUTCOMES] }),
    remote_addr: nullableText({ description: 'The caller\'s address, through TRUST_PROXY' }),
    details: anyObject({
      description: 'status_code; names and ids only, never a value from the body: fields (the body\'s field names), params (other path parameters), result_id (what the answer created), error (the refusal\'s code)',
    }),
  }),
  AuditPage: page('AuditEntry', true),
};
