/**
 * Whether the standard OpenTelemetry variables ask for traces. Off unless an exporter or an
 * OTLP endpoint is named; `OTEL_SDK_DISABLED=true` and `OTEL_TRACES_EXPORTER=none` turn it off.
 */
export function tracingRequested(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '').split(',').map((name) => name.trim()).filter(Boolean);
  if (exporters.length > 0) return !exporters.every((name) => name === 'none');
  return Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim());
}

/** `agent-task-<role>` unless `OTEL_SERVICE_NAME` (or `service.name` in the resource attributes) says otherwise. */
export function defaultServiceName(env: NodeJS.ProcessEnv, argv: string[]): string | undefined {
  if (env.OTEL_SERVICE_NAME?.trim() || /(^|,)\s*service\.name=/.test(env.OTEL_RESOURCE_ATTRIBUTES ?? '')) return undefined;
  const flag = argv.findIndex((arg) => arg === '--role' || arg.startsWith('--role='));
  const fromFlag = flag < 0 ? undefined : argv[flag].includes('=') ? argv[flag].split('=')[1] : argv[flag + 1];
  const role = (fromFlag ?? env.ROLE ?? 'all').trim() || 'all';
  return `agent-task-${role}`;
}
