import { ConfigError, loadConfig, roleFrom } from './config';

const secrets = {
  API_TOKEN: 't', SECRET_KEY: 's', CALLBACK_SIGNING_KEY: 'c', DISPATCHER_API_KEY: 'd', API_KEY: 'k', AGENT_KEY: 'a',
};

function problemsOf(env: Record<string, string>, argv: string[] = []): string[] {
  try {
    loadConfig(env, argv);
    return [];
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
}

describe('loadConfig', () => {
  it('gives the documented defaults for the all role', () => {
    const config = loadConfig(secrets);
    expect(config).toMatchObject({
      role: 'all',
      controllerPort: 8000,
      dispatcherPort: 8080,
      databaseUrl: null,
      redisUrl: null,
      s3: null,
      maxJsonBytes: 1024 * 1024,
      maxPackageBytes: 50 * 1024 * 1024,
      publicUrl: 'http://127.0.0.1:8000',
      controllerUrl: 'http://127.0.0.1:8000',
      dispatcherBackends: ['local'],
      localEngine: 'process',
      maxConcurrentTasks: 10,
      startGraceSeconds: 120,
      callbackMaxAgeSeconds: 86400,
      metricsEventLoopResolutionMs: 100,
    });
  });

  it('takes the role from --role before ROLE', () => {
    expect(roleFrom(['--role', 'dispatcher'], { ROLE: 'controller' })).toBe('dispatcher');
    expect(roleFrom(['--role=controller'], {})).toBe('controller');
    expect(roleFrom([], { ROLE: 'dispatcher' })).toBe('dispatcher');
    expect(roleFrom([], {})).toBe('all');
  });

  it('refuses an unknown role in one line naming the setting', () => {
    expect(problemsOf({ ...secrets, ROLE: 'worker' })).toEqual([
      'ROLE (or --role) must be one of controller, dispatcher, all (got "worker")',
    ]);
  });

  it('names every wrong variable and what it wants', () => {
    const problems = problemsOf({
      ...secrets,
      CONTROLLER_PORT: 'eighty',
      REDIS_URL: 'http://nope',
      LOCAL_ENGINE: 'vm',
      DISPATCHER_LABELS: '[1]',
      DISPATCHER_BACKENDS: 'local,nomad',
      MIGRATIONS_RUN: 'maybe',
      METRICS_EVENT_LOOP_RESOLUTION_MS: '0',
    });
    expect(problems).toEqual([
      'CONTROLLER_PORT must be a whole number from 0 to 65535 (got "eighty")',
      'METRICS_EVENT_LOOP_RESOLUTION_MS must be a whole number from 1 to 60000 (got "0")',
      'MIGRATIONS_RUN must be true or false (got "maybe")',
      'REDIS_URL must be a URL with redis: or rediss: (got "http://nope")',
      'DISPATCHER_LABELS must be a JSON object of strings (got "[1]")',
      'DISPATCHER_BACKENDS must be a comma-separated list of local, kubernetes (got "local,nomad")',
      'LOCAL_ENGINE must be one of process, docker (got "vm")',
    ]);
  });

  it('takes a TRACE_URL_TEMPLATE that is an http(s) URL holding {trace_id}, and names it otherwise', () => {
    expect(loadConfig({ ...secrets, TRACE_URL_TEMPLATE: 'https://tempo.example/explore?traceId={trace_id}' }).traceUrlTemplate).toBe('https://tempo.example/explore?traceId={trace_id}');
    expect(loadConfig(secrets).traceUrlTemplate).toBeNull();
    expect(problemsOf({ ...secrets, TRACE_URL_TEMPLATE: 'https://tempo.example/explore' })).toEqual([
      'TRACE_URL_TEMPLATE must be an http(s) URL holding {trace_id}, e.g. https://tempo.example/explore?traceId={trace_id} (got "https://tempo.example/explore")',
    ]);
  });

  it('requires each role\'s secrets in production, and only that role\'s', () => {
    expect(problemsOf({ NODE_ENV: 'production', ROLE: 'controller' })).toEqual([
      'API_TOKEN is required when NODE_ENV=production',
      'SECRET_KEY is required when NODE_ENV=production',
    ]);
    expect(problemsOf({ NODE_ENV: 'production' }, ['--role', 'dispatcher'])).toEqual([
      'API_KEY is required when NODE_ENV=production',
      'AGENT_KEY is required when NODE_ENV=production',
    ]);
  });

  it('requires S3 keys with an S3 endpoint', () => {
    expect(problemsOf({ ...secrets, S3_ENDPOINT: 'http://127.0.0.1:9000' })).toEqual([
      'S3_ACCESS_KEY and S3_SECRET_KEY are required when S3_ENDPOINT is set',
    ]);
  });
});
