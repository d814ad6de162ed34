import { AuthRequirement, Principal } from '../auth/principal';
import { operationIdOf } from '../../shared/http/openapi';
import { AuditResourceOptions } from './audit.decorators';
import { AuditActorKind, AuditOutcome } from './audit.entity';
import { AUDIT_EXCLUSIONS } from './audit-exclusions';

/** What an audited endpoint records: its action and where the resource's id is found. */
export interface AuditPlan {
  action: string;
  resourceType: string;
  param: string;
  answer: string;
}

/** An audit row before it is stored. */
export interface NewAuditEntry {
  /** When the request was answered: ISO 8601 at microseconds (`auditTime`). */
  at: string;
  actorKind: AuditActorKind;
  actorId: string;
  actorName: string;
  action: string;
  resourceType: string;
  resourceId: string | null;
  outcome: AuditOutcome;
  statusCode: number | null;
  remoteAddr: string | null;
  details: Record<string, unknown>;
}

export interface AuditedRequest {
  method: string;
  params: Record<string, string | undefined>;
  body: unknown;
  ip?: string;
}

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);
const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const MAX_FIELDS = 50;

/**
 * Whether an endpoint is audited, and how: every method but a read, on an endpoint that
 * takes an operator or OAuth client credential, unless its operation is one of
 * AUDIT_EXCLUSIONS. The action is the endpoint's OpenAPI operation id, dotted.
 */
export function auditPlanOf(
  method: string,
  controllerKey: string,
  methodKey: string,
  requirement: AuthRequirement | undefined,
  resource: AuditResourceOptions | undefined,
): AuditPlan | null {
  if (READS.has(method.toUpperCase()) || !requirement) return null;
  const operationId = operationIdOf(controllerKey, methodKey);
  if (operationId in AUDIT_EXCLUSIONS) return null;
  return {
    action: operationId.replace('_', '.'),
    resourceType: resource?.type ?? controllerKey.replace(/Controller$/, '').toLowerCase(),
    param: resource?.param ?? 'id',
    answer: resource?.answer ?? 'id',
  };
}

export function outcomeOf(status: number): AuditOutcome {
  if (status >= 500) return 'failed';
  return status >= 400 ? 'refused' : 'succeeded';
}

/**
 * The row for one request. `details` holds names and ids only, never a value from the body
 * (where tokens, client and subscription secrets and secret values travel): the body's
 * field names, the other path parameters, the id the answer names when it is not the
 * resource's (a re-run's new task), and the error code of a refusal.
 */
export function auditEntryOf(
  plan: AuditPlan,
  principal: Principal,
  request: AuditedRequest,
  status: number,
  answer: unknown,
  errorCode: string | null,
): NewAuditEntry {
  const fromPath = request.params[plan.param] ?? null;
  const fromAnswer = idInAnswer(answer, plan.answer);
  const resourceId = fromPath ?? fromAnswer;
  const params = Object.fromEntries(Object.entries(request.params).filter(([name, value]) => name !== plan.param && value !== undefined));
  const fields = fieldNames(request.body);
  const details: Record<string, unknown> = {
    ...(fields.length > 0 ? { fields } : {}),
    ...(Object.keys(params).length > 0 ? { params } : {}),
    ...(fromAnswer !== null && fromAnswer !== resourceId ? { result_id: fromAnswer } : {}),
    ...(errorCode ? { error: errorCode } : {}),
  };
  return {
    at: auditTime(),
    actorKind: principal.kind === 'operator' ? 'operator' : 'oauth_client',
    actorId: principal.id,
    // An OAuth client is named by its client_id, which is what its operator handed out.
    actorName: principal.kind === 'operator' ? principal.name : principal.id,
    action: plan.action,
    resourceType: plan.resourceType,
    resourceId,
    outcome: outcomeOf(status),
    statusCode: status,
    remoteAddr: request.ip ?? null,
    details,
  };
}

let lastMicros = 0;

/**
 * Now, at microseconds and rising within the process, so rows written in one batch keep
 * the order of their requests (the list orders by `(at, id)`).
 */
export function auditTime(): string {
  lastMicros = Math.max(Math.floor((performance.timeOrigin + performance.now()) * 1000), lastMicros + 1);
  return new Date(Math.floor(lastMicros / 1000)).toISOString().replace('Z', `${String(lastMicros % 1000).padStart(3, '0')}Z`);
}

function idInAnswer(answer: unknown, field: string): string | null {
  if (typeof answer !== 'object' || answer === null) return null;
  const value = (answer as Record<string, unknown>)[field];
  return typeof value === 'string' || typeof value === 'number' ? String(value) : null;
}

function fieldNames(body: unknown): string[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body) || Buffer.isBuffer(body)) return [];
  return Object.keys(body).filter((name) => FIELD_NAME.test(name)).sort().slice(0, MAX_FIELDS);
}
