import { RUNTIME_TYPE_NAME } from '../../src/shared/task-protocol/task-request';
import { http } from '../harness/http';
import { startTestSystem, TestSystem } from '../harness/system';

interface Schema {
  $ref?: string;
  type?: string;
  required?: string[];
  properties?: Record<string, Schema>;
  enum?: unknown[];
  items?: Schema;
  allOf?: Schema[];
}

interface Operation {
  security?: Record<string, string[]>[];
  requestBody?: { content: Record<string, { schema: Schema }> };
}

interface OpenApiDocument {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema>; securitySchemes: Record<string, unknown> };
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** Operations anyone may call: probes, the webhook inlet (signed per source) and the OAuth token endpoint. */
const PUBLIC: Record<'controller' | 'dispatcher', string[]> = {
  controller: ['get /livez', 'get /health', 'get /ready', 'post /api/v1/webhooks', 'post /api/v1/oauth/token', 'get /.well-known/oauth-authorization-server'],
  dispatcher: ['get /livez', 'get /health', 'get /ready'],
};

function resolve(document: OpenApiDocument, schema: Schema): Schema {
  if (schema.$ref) return resolve(document, document.components.schemas[schema.$ref.replace('#/components/schemas/', '')]);
  if (schema.allOf?.length === 1) return resolve(document, schema.allOf[0]);
  return schema;
}

function bodySchema(document: OpenApiDocument, method: string, path: string): Schema {
  const operation = document.paths[path]?.[method];
  expect(operation).toBeDefined();
  const schema = operation.requestBody?.content['application/json']?.schema;
  expect(schema).toBeDefined();
  return resolve(document, schema as Schema);
}

function operations(document: OpenApiDocument): [string, Operation][] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, operation]): [string, Operation] => [`${method} ${path}`, operation]));
}

describe('OpenAPI documents, as a client generator reads them', () => {
  let system: TestSystem;
  const documents: Partial<Record<'controller' | 'dispatcher', OpenApiDocument>> = {};

  beforeAll(async () => {
    system = await startTestSystem();
    for (const role of ['controller', 'dispatcher'] as const) {
      const base = role === 'controller' ? system.controllerUrl : system.dispatcherUrl;
      const answer = await http<OpenApiDocument>('GET', `${base}/api/docs/openapi.json`);
      expect(answer.status).toBe(200);
      documents[role] = answer.body;
    }
  });
  afterAll(() => system?.close());

  it('controller POST /api/v1/tasks/ names the task template and its required fields', () => {
    const document = documents.controller as OpenApiDocument;
    const schema = bodySchema(document, 'post', '/api/v1/tasks');
    expect(schema.required).toEqual(expect.arrayContaining(['agent_image', 'runtime_target']));
    expect(schema.required).not.toContain('brief');
    expect(Object.keys(schema.properties ?? {})).toEqual(expect.arrayContaining([
      'agent_image', 'runtime_target', 'resources', 'env', 'ports', 'skills', 'timeout_seconds',
      'dispatcher_labels', 'brief', 'brief_key', 'dispatcher',
    ]));
    const target = resolve(document, schema.properties?.runtime_target as Schema);
    expect(target.required).toEqual(['type']);
  });

  it('controller POST /api/v1/workflows/ names the workflow, its triggers and its task template', () => {
    const document = documents.controller as OpenApiDocument;
    const schema = bodySchema(document, 'post', '/api/v1/workflows');
    expect(schema.required).toEqual(expect.arrayContaining(['id', 'triggers', 'task_template']));
    expect(Object.keys(schema.properties ?? {})).toEqual(expect.arrayContaining(['name', 'enabled', 'priority']));

    const triggers = schema.properties?.triggers as Schema;
    expect(triggers.type).toBe('array');
    const trigger = resolve(document, triggers.items as Schema);
    // A webhook trigger names its event; a schedule trigger its cron instead.
    expect(trigger.required).toEqual(['source']);
    expect(trigger.properties?.source.enum).toEqual(['forge', 'chat', 'custom', 'schedule']);
    expect(Object.keys(trigger.properties ?? {})).toEqual(expect.arrayContaining(['event', 'filter', 'cron', 'timezone', 'catch_up']));
    expect(trigger.properties?.catch_up.enum).toEqual(['latest', 'none']);

    const template = resolve(document, schema.properties?.task_template as Schema);
    expect(template.required).toEqual(expect.arrayContaining(['agent_image', 'runtime_target']));
    expect(Object.keys(template.properties ?? {})).toContain('brief');
    const target = resolve(document, template.properties?.runtime_target as Schema);
    // Any runtime type a dispatcher offers: a name, not a list the controller keeps.
    expect(target.properties?.type).toMatchObject({ type: 'string', pattern: RUNTIME_TYPE_NAME.source });
  });

  it('controller PUT /api/v1/workflows/{id} takes the body without the id', () => {
    const document = documents.controller as OpenApiDocument;
    const schema = bodySchema(document, 'put', '/api/v1/workflows/{id}');
    expect(schema.required).toEqual(expect.arrayContaining(['triggers', 'task_template']));
    expect(schema.required).not.toContain('id');
  });

  it('dispatcher POST /tasks names the seed request and its required fields', () => {
    const document = documents.dispatcher as OpenApiDocument;
    const schema = bodySchema(document, 'post', '/tasks');
    expect(schema.required).toEqual(expect.arrayContaining([
      'task_id', 'agent_image', 'runtime_target', 'callback_url', 'callback_token',
    ]));
    expect(schema.required).not.toContain('timeout_seconds');
  });

  it.each(['controller', 'dispatcher'] as const)('%s: every protected operation lists a declared security scheme', (role) => {
    const document = documents[role] as OpenApiDocument;
    const schemes = Object.keys(document.components.securitySchemes ?? {});
    const all = operations(document);
    expect(all.length).toBeGreaterThan(5);
    const unprotected = all
      .filter(([name, operation]) => !PUBLIC[role].includes(name) && !(operation.security?.length))
      .map(([name]) => name);
    expect(unprotected).toEqual([]);
    for (const [, operation] of all) {
      for (const requirement of operation.security ?? []) {
        for (const scheme of Object.keys(requirement)) expect(schemes).toContain(scheme);
      }
    }
  });

  it('names the scheme each kind of caller uses', () => {
    const controller = documents.controller as OpenApiDocument;
    const dispatcher = documents.dispatcher as OpenApiDocument;
    const schemesOf = (document: OpenApiDocument, method: string, path: string) =>
      (document.paths[path][method].security ?? []).flatMap((requirement) => Object.keys(requirement)).sort();
    expect(schemesOf(controller, 'post', '/api/v1/tasks')).toEqual(['bearer', 'token']);
    expect(schemesOf(controller, 'post', '/api/v1/tasks/{guid}/callback')).toEqual(['callback_token']);
    expect(schemesOf(dispatcher, 'post', '/tasks')).toEqual(['api_key']);
    expect(schemesOf(dispatcher, 'post', '/agent/checkin')).toEqual(['agent_key']);
    // Operator-only endpoints answer 403 to OAuth access tokens, so they name the operator token alone.
    expect(schemesOf(controller, 'post', '/api/v1/oauth/clients')).toEqual(['token']);
    expect(schemesOf(controller, 'post', '/api/v1/webhooks/deliveries/{id}/replay')).toEqual(['token']);
    // No credential at all: an explicit empty list, so generators and linters do not assume a global one.
    expect(controller.paths['/api/v1/webhooks'].post.security).toEqual([]);
    expect(controller.paths['/api/v1/oauth/token'].post.security).toEqual([{ client_basic: [] }, {}]);
  });
});
