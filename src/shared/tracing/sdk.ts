import { isOwnClientRequest } from './own-client-request';
import { isStorageClientRequest } from './storage-client';
import { defaultServiceName, tracingRequested } from './tracing-settings';

interface StartedSdk {
  shutdown(): Promise<void>;
}

let sdk: StartedSdk | undefined;

export function tracingStarted(): boolean {
  return sdk !== undefined;
}

/**
 * Starts the OpenTelemetry SDK when the `OTEL_*` variables ask for traces (`register.ts` calls
 * it before anything else loads). With tracing off the SDK is never required: the
 * `@opentelemetry/api` calls elsewhere are then no-ops.
 */
export function startTracing(env: NodeJS.ProcessEnv = process.env, argv: string[] = process.argv.slice(2)): void {
  if (sdk || !tracingRequested(env)) return;
  const serviceName = defaultServiceName(env, argv);
  if (serviceName) env.OTEL_SERVICE_NAME = serviceName;
  // Traces only, unless asked: the SDK would otherwise export metrics and logs over OTLP too,
  // and record a metric per request (the metrics are Prometheus' at /metrics, the logs stdout's).
  env.OTEL_METRICS_EXPORTER ??= 'none';
  env.OTEL_LOGS_EXPORTER ??= 'none';
  /* eslint-disable @typescript-eslint/no-require-imports -- loaded only when tracing is on */
  const { NodeSDK } = require('@opentelemetry/sdk-node') as typeof import('@opentelemetry/sdk-node');
  const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http') as typeof import('@opentelemetry/instrumentation-http');
  const { ExpressInstrumentation, ExpressLayerType } = require('@opentelemetry/instrumentation-express') as typeof import('@opentelemetry/instrumentation-express');
  const { PgInstrumentation } = require('@opentelemetry/instrumentation-pg') as typeof import('@opentelemetry/instrumentation-pg');
  const { IORedisInstrumentation } = require('@opentelemetry/instrumentation-ioredis') as typeof import('@opentelemetry/instrumentation-ioredis');
  const { UndiciInstrumentation } = require('@opentelemetry/instrumentation-undici') as typeof import('@opentelemetry/instrumentation-undici');
  /* eslint-enable @typescript-eslint/no-require-imports */
  const started = new NodeSDK({
    instrumentations: [
      // An outgoing call made by no traced request or task (a loop's object storage sweep)
      // would begin a trace of one span.
      // The object store's requests are spans of their own (storage-spans.ts).
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (request) => isProbe(request.url ?? ''),
        ignoreOutgoingRequestHook: (request) => isStorageClientRequest(request.headers as Record<string, unknown> | undefined),
        requireParentforOutgoingSpans: true,
      }),
      // Request handlers only: a span per middleware would outnumber everything else.
      new ExpressInstrumentation({ ignoreLayersType: [ExpressLayerType.MIDDLEWARE] }),
      // A pool checkout is no query: its span would double the database spans for nothing.
      new PgInstrumentation({ requireParentSpan: true, ignoreConnectSpans: true }),
      new IORedisInstrumentation({ requireParentSpan: true }),
      // The roles' calls to each other are spans of their own (`inClientSpan`).
      new UndiciInstrumentation({ requireParentforSpans: true, ignoreRequestHook: isOwnClientRequest }),
    ],
  });
  started.start();
  sdk = started;
}

/** Flushes the spans still queued; called on shutdown. */
export async function stopTracing(): Promise<void> {
  const started = sdk;
  sdk = undefined;
  await started?.shutdown().catch(() => undefined);
}

/** Scrapes and probes, many a minute, would drown the traces of tasks. */
function isProbe(url: string): boolean {
  const path = url.split('?')[0];
  return path === '/metrics' || path === '/livez' || /^\/(health|ready)\/?$/.test(path);
}
