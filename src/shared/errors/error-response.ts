import { randomUUID } from 'node:crypto';
import { HttpException } from '@nestjs/common';
import { isDependencyDown } from './dependency-down';
import { DomainError, ERROR_STATUS, ErrorCode } from './domain-error';

/** What any thrown value means on the wire, before a role puts it in its envelope. */
export interface ErrorView {
  status: number;
  code: ErrorCode;
  message: string;
  fields?: Record<string, string[]>;
  details?: Record<string, unknown>;
  headers: Record<string, string>;
  /** A body that is already in its final shape (Terminus' probe report). */
  verbatim?: object;
  /** Set for unexpected errors: logged with the stack, shown to the caller without it. */
  errorId?: string;
  cause?: unknown;
}

const STATUS_CODES: Record<number, ErrorCode> = Object.fromEntries(
  Object.entries(ERROR_STATUS).map(([code, status]) => [status, code as ErrorCode]),
);

interface BodyParserError {
  type?: string;
  status?: number;
  expose?: boolean;
}

export function toErrorView(error: unknown): ErrorView {
  if (error instanceof DomainError) {
    return {
      status: error.status,
      code: error.code,
      message: error.message,
      fields: error.options.fields,
      details: error.options.details,
      headers: error.options.headers ?? {},
    };
  }
  // Nest wraps body-parser's syntax errors in a BadRequestException holding the parser's own
  // message; the error is answered from its cause, as the hot lane answers it, whichever path read the body.
  const parserError = (error instanceof HttpException && (error.cause as BodyParserError | undefined)?.type ? error.cause : error) as BodyParserError;
  if (parserError?.type === 'entity.too.large') {
    return { status: 413, code: 'payload_too_large', message: 'Request body is larger than allowed.', headers: {} };
  }
  if (parserError?.type === 'entity.parse.failed') {
    return { status: 400, code: 'parse_error', message: 'Request body is not valid JSON.', headers: {} };
  }
  if (parserError?.type === 'encoding.unsupported' || parserError?.type === 'charset.unsupported') {
    return { status: 415, code: 'unsupported_media_type', message: 'Request body encoding is not supported.', headers: {} };
  }
  if (error instanceof HttpException) {
    const status = error.getStatus();
    const response = error.getResponse();
    if (status === 503 && typeof response === 'object' && response !== null && 'details' in response) {
      return { status, code: 'unavailable', message: 'Service unavailable.', headers: {}, verbatim: response };
    }
    if (status < 500) {
      const code = STATUS_CODES[status] ?? (status === 404 ? 'not_found' : 'invalid');
      const message = status === 404 ? 'Not found.' : sentence(error.message);
      return { status, code, message, headers: {} };
    }
  }
  const errorId = randomUUID();
  if (isDependencyDown(error)) {
    // Logged with its id like any unexpected error, but the caller may simply try again.
    return {
      status: 503,
      code: 'unavailable',
      message: `A service this server depends on is not reachable; try again shortly (error id ${errorId}).`,
      headers: { 'Retry-After': '5' },
      errorId,
      cause: error,
    };
  }
  return {
    status: 500,
    code: 'server_error',
    message: `Internal server error (error id ${errorId}).`,
    headers: {},
    errorId,
    cause: error,
  };
}

function sentence(text: string): string {
  const trimmed = text.trim() || 'Request refused.';
  return /[.!?]$/.test(trimmed) ? trimmed : `${trimmed}.`;
}
