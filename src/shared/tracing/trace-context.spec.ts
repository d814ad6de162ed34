import { ROOT_CONTEXT } from '@opentelemetry/api';
import { requestContext, untracedContext } from '../logging/request-context';
import { agentTraceEnv, carrierOf, currentCarrier, forwardedTraceHeaders, inSpan, inTaskSpan, linkTo, logTraceFields, outsideTraces, traceColumns, traceIdOf } from './trace-context';

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

describe('carrierOf', () => {
  it('takes a version-00 traceparent, lower-cased, with its tracestate', () => {
    expect(carrierOf(TRACEPARENT.toUpperCase(), ' vendor=abc ')).toEqual({ traceparent: TRACEPARENT, tracestate: 'vendor=abc' });
    expect(carrierOf(TRACEPARENT)).toEqual({ traceparent: TRACEPARENT });
  });

  it('refuses malformed values and the all-zero ids', () => {
    for (const value of ['', 'garbage', `01-${TRACEPARENT.slice(3)}`, '00-00000000000000000000000000000000-00f067aa0ba902b7-01', '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01', [TRACEPARENT]]) {
      expect(carrierOf(value)).toBeNull();
    }
  });

  it('drops a tracestate past 512 characters', () => {
    expect(carrierOf(TRACEPARENT, `a=${'b'.repeat(600)}`)).toEqual({ traceparent: TRACEPARENT });
  });
});

describe('with no SDK running', () => {
  it('keeps and forwards the context the request came with', () => {
    requestContext.run({ incomingTrace: { traceparent: TRACEPARENT, tracestate: 'v=1' } }, () => {
      expect(currentCarrier()).toEqual({ traceparent: TRACEPARENT, tracestate: 'v=1' });
      expect(traceColumns()).toEqual({ traceParent: TRACEPARENT, traceState: 'v=1' });
      expect(forwardedTraceHeaders()).toEqual({ traceparent: TRACEPARENT, tracestate: 'v=1' });
      expect(logTraceFields()).toBeUndefined();
      // The request context has a storage of its own then; leaving a trace leaves nothing behind.
      expect(requestContext.getStore()?.incomingTrace?.traceparent).toBe(TRACEPARENT);
      expect(untracedContext()).toBe(ROOT_CONTEXT);
    });
    expect(requestContext.getStore()).toBeUndefined();
    expect(currentCarrier()).toBeNull();
    expect(traceColumns()).toEqual({ traceParent: null, traceState: null });
    expect(forwardedTraceHeaders()).toEqual({});
  });

  it('runs span work once, as it is, with a span that records nothing, and links to nothing', async () => {
    const seen: boolean[] = [];
    await expect(inTaskSpan('start agent', { traceparent: TRACEPARENT }, {}, async (span) => {
      seen.push(span.isRecording());
      span.setAttribute('task.id', 'x');
      return 'done';
    })).resolves.toBe('done');
    await expect(inSpan('close task', {}, async () => {
      throw new Error('refused');
    })).rejects.toThrow('refused');
    expect(seen).toEqual([false]);
    expect(linkTo({ traceparent: TRACEPARENT })).toBeNull();
    expect(outsideTraces(() => 42)).toBe(42);
    const carried = await requestContext.run({ incomingTrace: { traceparent: TRACEPARENT } }, () => inTaskSpan('send callback', null, {}, async () => currentCarrier()));
    expect(carried).toEqual({ traceparent: TRACEPARENT });
  });

  it('gives the trace id of a stored traceparent', () => {
    expect(traceIdOf(TRACEPARENT)).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(traceIdOf(null)).toBeNull();
  });
});

describe('agentTraceEnv', () => {
  it('is the OpenTelemetry environment carrier', () => {
    expect(agentTraceEnv({ traceparent: TRACEPARENT, tracestate: 'v=1' })).toEqual({ TRACEPARENT: TRACEPARENT, TRACESTATE: 'v=1' });
    expect(agentTraceEnv({ traceparent: TRACEPARENT })).toEqual({ TRACEPARENT: TRACEPARENT });
    expect(agentTraceEnv(null)).toEqual({});
  });
});
