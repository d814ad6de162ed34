import { ArgumentsHost, Catch, ExceptionFilter, Logger } from '@nestjs/common';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ErrorView, toErrorView } from './error-response';

abstract class RoleExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('HttpError');

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    this.respond(exception, http.getRequest<IncomingMessage>(), http.getResponse<ServerResponse>());
  }

  /**
   * Answers `exception` in the role's error shape, with Node's own response methods, so the
   * hot lane (which has no Express response) answers errors exactly as the Nest routes do.
   */
  respond(exception: unknown, request: IncomingMessage, response: ServerResponse): void {
    const view = toErrorView(exception);
    if (view.errorId) {
      const err = view.cause instanceof Error ? view.cause : new Error(String(view.cause));
      this.logger.error({ errorId: view.errorId, method: request.method, path: (request.url ?? '').split('?')[0], err }, 'Unhandled error');
    }
    if (response.headersSent) {
      response.end();
      return;
    }
    for (const [name, value] of Object.entries(view.headers)) response.setHeader(name, value);
    const text = JSON.stringify(view.verbatim ?? this.body(view));
    response.statusCode = view.status;
    response.setHeader('Content-Type', 'application/json; charset=utf-8');
    response.setHeader('Content-Length', Buffer.byteLength(text));
    response.end(text);
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
