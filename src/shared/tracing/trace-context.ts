import { Attributes, context, INVALID_SPAN_CONTEXT, Link, propagation, ROOT_CONTEXT, Span, SpanKind, SpanStatusCode, trace, Tracer } from '@opentelemetry/api';
import { requestContext, untracedContext } from '../logging/request-context';
import { tracingStarted } from './sdk';

/** A W3C trace context as the headers (and an agent's environment) carry it. */
export interface TraceCarrier {
  traceparent: string;
  tracestate?: string;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);
const TRACESTATE_MAX = 512;

/** The carrier of a `traceparent` / `tracestate` pair, or null when `traceparent` is not a valid version-00 value. */
export function carrierOf(traceparent: unknown, tracestate?: unknown): TraceCarrier | null {
  if (typeof traceparent !== 'string') return null;
  const value = traceparent.trim().toLowerCase();
  const parts = TRACEPARENT.exec(value);
  if (!parts || value.slice(3, 35) === ZERO_TRACE || value.slice(36, 52) === ZERO_SPAN) return null;
  const state = typeof tracestate === 'string' ? tracestate.trim() : '';
  return state && state.length <= TRACESTATE_MAX ? { traceparent: value, tracestate: state } : { traceparent: value };
}

export function traceIdOf(traceparent: string | null | undefined): string | null {
  return traceparent ? (TRACEPARENT.exec(traceparent)?.[1] ?? null) : null;
}

/**
 * The trace context to store or hand on from here: the active span's when tracing is on,
 * else the one the current request came with, so a trace begun upstream still reaches the
 * agent and the task view when this process exports nothing.
 */
export function currentCarrier(): TraceCarrier | null {
  if (!tracingStarted()) return requestContext.getStore()?.incomingTrace ?? null;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrierOf(carrier.traceparent, carrier.tracestate) ?? requestContext.getStore()?.incomingTrace ?? null;
}

/** A task row's trace columns from the current context. */
export function traceColumns(): { traceParent: string | null; traceState: string | null } {
  const carrier = currentCarrier();
  return { traceParent: carrier?.traceparent ?? null, traceState: carrier?.tracestate ?? null };
}

export function storedCarrier(row: { traceParent: string | null; traceState: string | null }): TraceCarrier | null {
  return carrierOf(row.traceParent, row.traceState);
}

/**
 * Headers for an outgoing request when no SDK runs; with the SDK on, the request's client span
 * (`inClientSpan`, or the fetch instrumentation's) writes them (writing them here too would send two).
 */
export function forwardedTraceHeaders(carrier: TraceCarrier | null = currentCarrier()): Record<string, string> {
  if (tracingStarted() || !carrier) return {};
  return carrier.tracestate ? { traceparent: carrier.traceparent, tracestate: carrier.tracestate } : { traceparent: carrier.traceparent };
}

/** `TRACEPARENT` / `TRACESTATE` for an agent's environment (the OpenTelemetry environment carrier). */
export function agentTraceEnv(carrier: TraceCarrier | null): Record<string, string> {
  if (!carrier) return {};
  return carrier.tracestate ? { TRACEPARENT: carrier.traceparent, TRACESTATE: carrier.tracestate } : { TRACEPARENT: carrier.traceparent };
}

let controllerTracer: Tracer | undefined;
/**
 * Looked up once: each lookup through the API's proxy provider builds a key and walks two
 * providers, and a traced request asks for its tracer several times.
 */
export const tracer = (): Tracer => (controllerTracer ??= trace.getTracer('agent-task-controller'));

export interface TaskSpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  links?: Link[];
}

/**
 * What a span's work is given when tracing is off: the API's own non-recording span, made once.
 * Without an SDK the API would make one per call, and a context to hold it, for nothing.
 */
const UNTRACED = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/**
 * Runs `work` in a span of the task's own trace (its stored context is the parent), whatever
 * context the caller runs in: a loop's round serves many tasks, each in its own trace.
 */
export function inTaskSpan<T>(name: string, parent: TraceCarrier | null, options: TaskSpanOptions, work: (span: Span) => Promise<T>): Promise<T> {
  if (!tracingStarted()) return work(UNTRACED);
  const parentContext = parent ? propagation.extract(untracedContext(), parent) : untracedContext();
  return tracer().startActiveSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, attributes: options.attributes, links: options.links }, parentContext, (span) => endingSpan(span, work));
}

/** Runs `work` in a child span of the active one. */
export function inSpan<T>(name: string, options: TaskSpanOptions, work: (span: Span) => Promise<T>): Promise<T> {
  if (!tracingStarted()) return work(UNTRACED);
  return tracer().startActiveSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, attributes: options.attributes, links: options.links }, (span) => endingSpan(span, work));
}

/** A link to a stored context (the request that stored a task), for a span serving many tasks. */
export function linkTo(carrier: TraceCarrier | null, attributes?: Attributes): Link | null {
  if (!carrier || !tracingStarted()) return null;
  const spanContext = trace.getSpanContext(propagation.extract(ROOT_CONTEXT, carrier));
  return spanContext ? { context: spanContext, attributes } : null;
}

async function endingSpan<T>(span: Span, work: (span: Span) => Promise<T>): Promise<T> {
  try {
    return await work(span);
  } catch (error) {
    span.recordException(error instanceof Error ? error : String(error));
    span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
    throw error;
  } finally {
    span.end();
  }
}

/** The active span's ids for a log line, when a sampled or recording span is active. */
export function logTraceFields(): { trace_id: string; span_id: string } | undefined {
  if (!tracingStarted()) return undefined;
  const spanContext = trace.getSpanContext(context.active());
  if (!spanContext || spanContext.traceId === ZERO_TRACE) return undefined;
  return { trace_id: spanContext.traceId, span_id: spanContext.spanId };
}

/**
 * Runs `work` outside any trace: for work one request starts on behalf of many (a batch
 * written for every request queued meanwhile, a timer shared by all of them), which would
 * otherwise be recorded as the child of whichever request happened to start it. Its database
 * spans are then not recorded at all (`requireParentSpan`).
 */
export function outsideTraces<T>(work: () => T): T {
  if (!tracingStarted()) return work();
  return context.with(untracedContext(), work);
}
