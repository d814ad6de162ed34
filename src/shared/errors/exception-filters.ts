import { ArgumentsHost, Catch, ExceptionFilter, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { ErrorView, toErrorView } from './error-response';

abstract class RoleExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('HttpError');

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    this.respond(exception, http.getRequest<Request>(), http.getResponse<Response>());
  }

  /** Answers `exception` in the role's error shape (also for routes served outside Nest's router). */
  respond(exception: unknown, request: Request, response: Response): void {
    const view = toErrorView(exception);
    if (view.errorId) {
      const err = view.cause instanceof Error ? view.cause : new Error(String(view.cause));
      this.logger.error({ errorId: view.errorId, method: request.method, path: request.path, err }, 'Unhandled error');
    }
    if (response.headersSent) {
      response.end();
      return;
    }
    for (const [name, value] of Object.entries(view.headers)) response.setHeader(name, value);
    response.status(view.status).json(view.verbatim ?? this.body(view));
  }

  protected abstract body(view: ErrorView): unknown;
}

/** Controller errors: `{detail, code, errors?}` (CONTRACT section 1). */
@Catch()
export class ControllerExceptionFilter extends RoleExceptionFilter {
  protected body(view: ErrorView): unknown {
    return {
      detail: view.message,
      code: view.code,
      ...(view.errorId ? { error_id: view.errorId } : {}),
      ...(view.fields ? { errors: view.fields } : {}),
    };
  }
}

/** Dispatcher errors: `{ok: false, error: {code, message, details}}` (CONTRACT section 1). */
@Catch()
export class DispatcherExceptionFilter extends RoleExceptionFilter {
  protected body(view: ErrorView): unknown {
    const details = { ...(view.details ?? {}), ...(view.fields ? { fields: view.fields } : {}), ...(view.errorId ? { error_id: view.errorId } : {}) };
    return { ok: false, error: { code: view.code, message: view.message, details } };
  }
}
