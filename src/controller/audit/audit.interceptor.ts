import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { Response } from 'express';
import { Observable, tap } from 'rxjs';
import { AuthenticatedRequest } from '../auth/auth.guard';
import { AuditTrail } from './audit-trail';

/**
 * Global: every controller endpoint passes here once its guards let the caller in; an
 * audited one (see `auditPlanOf`) gets its row when its handler answers or throws, for a
 * success and for a refusal (validation, not found, conflict) alike.
 */
@Injectable()
export class AuditInterceptor implements NestInterceptor {
  constructor(private readonly trail: AuditTrail) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    const plan = this.trail.planFor(context);
    if (!plan) return next.handle();
    const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
    const response = context.switchToHttp().getResponse<Response>();
    return next.handle().pipe(tap({
      next: (answer) => this.trail.succeeded(plan, request, response.statusCode, answer),
      error: (error: unknown) => this.trail.threw(plan, request, error),
    }));
  }
}
