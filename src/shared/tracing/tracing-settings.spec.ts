import { defaultServiceName, tracingRequested } from './tracing-settings';

describe('tracingRequested', () => {
  it('is off unless an exporter or an OTLP endpoint is named', () => {
    expect(tracingRequested({})).toBe(false);
    expect(tracingRequested({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' })).toBe(false);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(true);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' })).toBe(true);
    expect(tracingRequested({ OTEL_TRACES_EXPORTER: 'otlp' })).toBe(true);
    expect(tracingRequested({ OTEL_TRACES_EXPORTER: 'console,otlp' })).toBe(true);
  });

  it('honours OTEL_SDK_DISABLED and an exporter of none over an endpoint', () => {
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' })).toBe(false);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'TRUE' })).toBe(false);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'false' })).toBe(true);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'none' })).toBe(false);
  });
});

describe('defaultServiceName', () => {
  it('names the role, from --role before ROLE, all by default', () => {
    expect(defaultServiceName({}, [])).toBe('agent-task-all');
    expect(defaultServiceName({ ROLE: 'dispatcher' }, [])).toBe('agent-task-dispatcher');
    expect(defaultServiceName({ ROLE: 'dispatcher' }, ['--role', 'controller'])).toBe('agent-task-controller');
    expect(defaultServiceName({}, ['--role=dispatcher'])).toBe('agent-task-dispatcher');
  });

  it('leaves a name given by OTEL_SERVICE_NAME or the resource attributes alone', () => {
    expect(defaultServiceName({ OTEL_SERVICE_NAME: 'atc-eu' }, [])).toBeUndefined();
    expect(defaultServiceName({ OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod,service.name=atc' }, [])).toBeUndefined();
  });
});
