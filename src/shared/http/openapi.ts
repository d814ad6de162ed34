import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import type { OperationObject, ResponseObject, SchemaObject } from './openapi-schema';
import { AppConfig } from '../config/config';
import { ERROR_RESPONSES, ERROR_SCHEMAS } from './openapi-errors';

export type DocumentRole = 'controller' | 'dispatcher';

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const;

/** An endpoint's operation id in the document: `tasks_cancel` for `TasksController.cancel`. */
export function operationIdOf(controllerKey: string, methodKey: string): string {
  return `${controllerKey.replace(/Controller$/, '').toLowerCase()}_${methodKey}`;
}

/**
 * The role's OpenAPI document, as served at /api/docs/openapi.json and as CI lints it
 * (`scripts/check-openapi.mjs`). Decorators on each endpoint name its success answers, its
 * own refusals and its security; `completeOperations` adds what every endpoint of the role
 * shares, so a document never says less than the server does.
 */
export function buildOpenApiDocument(app: INestApplication, role: DocumentRole, config: AppConfig, schemas: Record<string, SchemaObject>): OpenAPIObject {
  const document = SwaggerModule.createDocument(app, documentBuilder(role, config).build(), {
    operationIdFactory: operationIdOf,
  });
  const errors = role === 'controller' ? ['ControllerError', 'OAuthError'] : ['DispatcherError'];
  const errorSchemas = Object.fromEntries(errors.map((name) => [name, ERROR_SCHEMAS[name]]));
  document.components = { ...document.components, schemas: { ...document.components?.schemas, ...errorSchemas, ...schemas } };
  completeOperations(document, role);
  return document;
}

function documentBuilder(role: DocumentRole, config: AppConfig): DocumentBuilder {
  const builder = new DocumentBuilder()
    .setTitle(role === 'controller' ? 'Agent task controller' : 'Agent task dispatcher')
    .setDescription(role === 'controller'
      ? 'Stores tasks, routes webhooks to workflows and dispatches tasks to dispatchers. Paths are also served with a trailing slash.'
      : 'Runs tasks as agents on its runtime backends and reports their final state to the controller.')
    .setVersion('1')
    .setLicense('Apache-2.0', 'https://www.apache.org/licenses/LICENSE-2.0')
    .addServer(role === 'controller' ? config.publicUrl : config.dispatcherPublicUrl);
  if (role !== 'controller') {
    // The schemes named by the dispatcher's `@ApiKeyAuth()` and `@AgentAuth()`.
    return builder
      .addApiKey({ type: 'apiKey', in: 'header', name: 'X-API-Key', description: "The dispatcher's API_KEY" }, 'api_key')
      .addApiKey({ type: 'apiKey', in: 'header', name: 'X-Agent-Key', description: 'A per-task agent key (or AGENT_KEY)' }, 'agent_key');
  }
  // The schemes named by the controller's auth decorators and by the task callback and progress endpoints.
  return builder
    .addApiKey({ type: 'apiKey', in: 'header', name: 'Authorization', description: 'Operator token, sent as "Token <key>"' }, 'token')
    .addBasicAuth({ type: 'http', scheme: 'basic', description: 'OAuth client_id and client_secret (token endpoint only; or send them in the body)' }, 'client_basic')
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'OAuth 2.0 access token from POST /api/v1/oauth/token/' })
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: "The task's callback token (task callback and progress only)" }, 'callback_token');
}

/**
 * What every operation of the role has: `security: []` when it takes no credential; the
 * refusals any request may meet (a body too large or of another type, a bad JSON body,
 * a bad query, a server error, a dependency down); and the role's error body on every refusal an
 * endpoint names without a schema of its own.
 */
function completeOperations(document: OpenAPIObject, role: DocumentRole): void {
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of METHODS) {
      const operation = item[method] as OperationObject | undefined;
      if (!operation) continue;
      operation.security ??= [];
      declarePathParameters(path, operation);
      const readsQuery = (operation.parameters ?? []).some((parameter) => 'in' in parameter && parameter.in === 'query');
      const statuses = [...(operation.requestBody ? ['400', '413', '415'] : readsQuery ? ['400'] : []), '500', '503'];
      for (const status of statuses) operation.responses[status] ??= { description: ERROR_RESPONSES[status] ?? 'error' };
      for (const [status, response] of Object.entries(operation.responses)) {
        if (Number(status) >= 400) fillErrorResponse(response as ResponseObject, status, role);
      }
    }
  }
}

/** A path parameter a handler reads through a guard rather than `@Param()` (`{guid}` of the callbacks) is still declared. */
function declarePathParameters(path: string, operation: OperationObject): void {
  const declared = new Set((operation.parameters ?? []).map((parameter) => ('name' in parameter ? `${parameter.in}:${parameter.name}` : '')));
  for (const [, name] of path.matchAll(/\{([^}]+)\}/g)) {
    if (declared.has(`path:${name}`)) continue;
    operation.parameters = [...(operation.parameters ?? []), { name, in: 'path', required: true, schema: { type: 'string' } }];
  }
}

const CHALLENGE = { description: 'The scheme(s) to authenticate with', schema: { type: 'string' } } as const;
const RETRY_AFTER = { description: 'Seconds to wait before trying again', schema: { type: 'integer' } } as const;

function fillErrorResponse(response: ResponseObject, status: string, role: DocumentRole): void {
  response.content ??= { 'application/json': { schema: { $ref: `#/components/schemas/${role === 'controller' ? 'ControllerError' : 'DispatcherError'}` } } };
  if (status === '401') response.headers = { 'WWW-Authenticate': CHALLENGE, ...response.headers };
  if (status === '429') response.headers = { 'Retry-After': RETRY_AFTER, ...response.headers };
}
