import { AsyncLocalStorage } from 'node:async_hooks';

export interface RequestContext {
  /** Set for the work of one HTTP request. */
  requestId?: string;
  /** The role whose request, boot or background loop this is: both run in one process in `all`. */
  role?: 'controller' | 'dispatcher';
  /** The W3C trace context the request came with, kept for when no SDK runs (shared/tracing). */
  incomingTrace?: { traceparent: string; tracestate?: string };
}

/**
 * Carries the request id and the role through everything a request (or a role's boot, and
 * the loops it starts) does, so every log line says which it belongs to.
 */
export const requestContext = new AsyncLocalStorage<RequestContext>();
