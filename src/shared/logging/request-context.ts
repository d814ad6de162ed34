import { AsyncLocalStorage } from 'node:async_hooks';
import { Context, context, createContextKey, ROOT_CONTEXT } from '@opentelemetry/api';
import { tracingStarted } from '../tracing/sdk';

export interface RequestContext {
  /** Set for the work of one HTTP request. */
  requestId?: string;
  /** The role whose request, boot or background loop this is: both run in one process in `all`. */
  role?: 'controller' | 'dispatcher';
  /** The W3C trace context the request came with, kept for when no SDK runs (shared/tracing). */
  incomingTrace?: { traceparent: string; tracestate?: string };
}

/** Where the request context sits inside an OpenTelemetry context. */
const IN_TRACE_CONTEXT = createContextKey('agent-task request context');

/** The request context's own storage, used while no SDK runs. */
const ownStorage = new AsyncLocalStorage<RequestContext>();

/**
 * Carries the request id and the role through everything a request (or a role's boot, and
 * the loops it starts) does, so every log line says which it belongs to.
 *
 * With tracing on, the context rides in the SDK's own context (its context manager's
 * AsyncLocalStorage) rather than a storage of its own. Each AsyncLocalStorage in a process
 * copies its value onto every promise and callback made anywhere, about 65 ns a promise for
 * the second one (docs/performance.md, twenty-second pass).
 * So, with tracing on, a context that leaves the current trace behind must keep this
 * one: `untracedContext()` gives the root of a new trace with it.
 */
export const requestContext = {
  run<T>(store: RequestContext, work: () => T): T {
    if (!tracingStarted()) return ownStorage.run(store, work);
    return context.with(context.active().setValue(IN_TRACE_CONTEXT, store), work);
  },

  getStore(): RequestContext | undefined {
    if (!tracingStarted()) return ownStorage.getStore();
    return context.active().getValue(IN_TRACE_CONTEXT) as RequestContext | undefined;
  },
};

/**
 * An OpenTelemetry context outside every trace that still carries the current request
 * context: where work leaves the caller's trace (a loop's round, a batch written for many
 * requests, a task's span in the task's own trace), its log lines keep their role and request id.
 */
export function untracedContext(): Context {
  if (!tracingStarted()) return ROOT_CONTEXT;
  const store = context.active().getValue(IN_TRACE_CONTEXT) as RequestContext | undefined;
  if (store === undefined) return ROOT_CONTEXT;
  // Made once per store: a loop is kicked, and a hot-lane request starts its span, many times
  // in one role's or one request's context, and each new context copies the whole map.
  let untraced = untracedOf.get(store);
  if (!untraced) untracedOf.set(store, (untraced = ROOT_CONTEXT.setValue(IN_TRACE_CONTEXT, store)));
  return untraced;
}

/** Each request context's root of a new trace (`untracedContext`), gone with the context. */
const untracedOf = new WeakMap<RequestContext, Context>();
