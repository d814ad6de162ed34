import { NestFactory } from '@nestjs/core';
import type { OpenAPIObject } from '@nestjs/swagger';
import { CONTROLLER_SCHEMAS } from './controller/controller.openapi';
import { ControllerModule } from './controller/controller.module';
import { DISPATCHER_SCHEMAS } from './dispatcher/dispatcher.openapi';
import { DispatcherModule } from './dispatcher/dispatcher.module';
import { AppConfig } from './shared/config/config';
import { SchemaObject } from './shared/http/openapi-schema';
import { buildOpenApiDocument, DocumentRole } from './shared/http/openapi';

/** Each role's response schemas, the components its endpoints' decorators name. */
export const ROLE_SCHEMAS: Record<DocumentRole, Record<string, SchemaObject>> = {
  controller: CONTROLLER_SCHEMAS,
  dispatcher: DISPATCHER_SCHEMAS,
};

/**
 * A role's OpenAPI document without a server, a database or any other service: Nest's
 * preview mode builds the module graph without creating providers, which is all the
 * document needs (CI lints and type-checks it this way: `scripts/check-openapi.mjs`).
 */
export async function openApiDocument(role: DocumentRole, config: AppConfig): Promise<OpenAPIObject> {
  const module = role === 'controller' ? ControllerModule.forRoot(config) : DispatcherModule.forRoot(config);
  const app = await NestFactory.create(module, { preview: true, logger: false, abortOnError: false });
  try {
    return buildOpenApiDocument(app, role, config, ROLE_SCHEMAS[role]);
  } finally {
    await app.close();
  }
}
