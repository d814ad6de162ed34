import { ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { toErrorView } from '../../shared/errors/error-response';
import { AuthenticatedRequest, authRequirementOf } from '../auth/auth.guard';
import { Principal } from '../auth/principal';
import { AUDIT_RESOURCE, AuditResourceOptions } from './audit.decorators';
import { auditEntryOf, AuditPlan, auditPlanOf } from './audit-plan';
import { AuditWriter } from './audit-writer';

/** What an audit row is made of, of the request: an Express request, or the hot lane's equivalent. */
export type AuditedRequest = Pick<AuthenticatedRequest, 'method' | 'params' | 'body' | 'ip' | 'principal'>;

/**
 * Makes the audit row of a state-changing request from the route's metadata and hands it
 * to the AuditWriter: the interceptor calls it once the handler has answered or thrown,
 * the auth guard when it refuses a known caller the endpoint's scope, and a hot route
 * (which Nest's interceptor never sees) for the endpoint it answers.
 */
@Injectable()
export class AuditTrail {
  private readonly plans = new WeakMap<Function, AuditPlan | null>();

  constructor(
    private readonly reflector: Reflector,
    private readonly writer: AuditWriter,
  ) {}

  /** The endpoint's audit plan, or null when it is not audited; worked out once per handler. */
  planFor(context: ExecutionContext): AuditPlan | null {
    return this.planOf(context.switchToHttp().getRequest<AuthenticatedRequest>().method, context.getClass(), context.getHandler());
  }

  /** The plan of `controller`'s `handler` answering `method`. */
  planOf(method: string, controller: Function, handler: Function): AuditPlan | null {
    const known = this.plans.get(handler);
    if (known !== undefined) return known;
    const plan = auditPlanOf(
      method,
      controller.name,
      handler.name,
      authRequirementOf(this.reflector, controller, handler),
      this.reflector.getAllAndOverride<AuditResourceOptions | undefined>(AUDIT_RESOURCE, [handler, controller]),
    );
    this.plans.set(handler, plan);
    return plan;
  }

  succeeded(plan: AuditPlan, request: AuditedRequest, status: number, answer: unknown): void {
    if (request.principal) this.write(plan, request.principal, request, status, answer, null);
  }

  threw(plan: AuditPlan, request: AuditedRequest, error: unknown, principal = request.principal): void {
    if (!principal) return;
    const view = toErrorView(error);
    this.write(plan, principal, request, view.status, undefined, view.code);
  }

  /** The guard's refusal of a caller it knows (403): no interceptor runs after a guard refuses. */
  refused(context: ExecutionContext, principal: Principal, error: unknown): void {
    const plan = this.planFor(context);
    if (plan) this.threw(plan, context.switchToHttp().getRequest<AuthenticatedRequest>(), error, principal);
  }

  private write(plan: AuditPlan, principal: Principal, request: AuditedRequest, status: number, answer: unknown, errorCode: string | null): void {
    const seen = { method: request.method, params: request.params as Record<string, string>, body: request.body, ip: request.ip };
    this.writer.add(auditEntryOf(plan, principal, seen, status, answer, errorCode));
  }
}
