import { INestApplication, Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { CONTROLLER_HOT_ROUTES, ControllerModule } from './controller/controller.module';
import { DISPATCHER_HOT_ROUTES, DispatcherModule } from './dispatcher/dispatcher.module';
import { AppConfig } from './shared/config/config';
import { roleDataSourceOptions, SchemaRole } from './shared/database/data-sources';
import { EmbeddedPostgres, startEmbeddedPostgres } from './shared/database/embedded-postgres';
import { runMigrations } from './shared/database/migrate';
import { SCHEMA_PARTS } from './shared/database/schema-parts';
import { configureHttp } from './shared/http/configure-app';
import { ROLE_SCHEMAS } from './openapi-documents';
import { createRootLogger, PinoNestLogger, rootLogger } from './shared/logging/logger';
import { logFormatFor } from './shared/logging/pretty-output';
import { requestContext } from './shared/logging/request-context';
import { closeServer, listenOnAgentPort } from './dispatcher/agent/agent-port';
import { applyServerLimits } from './shared/http/server-limits';
import { collectProcessMetrics } from './shared/metrics/metrics';
import type { Server } from 'node:http';

export interface RunningSystem {
  config: AppConfig;
  controller?: INestApplication;
  dispatcher?: INestApplication;
  close(): Promise<void>;
}

/** Builds one role's Nest application, configured but not listening. */
export async function createRoleApp(role: SchemaRole, config: AppConfig): Promise<INestApplication> {
  collectProcessMetrics(config.metricsEventLoopResolutionMs);
  const module = role === 'controller' ? ControllerModule.forRoot(config) : DispatcherModule.forRoot(config);
  const app = await NestFactory.create(module, {
    bodyParser: false,
    // The role of each line comes from the request context (see startSystem), not from a
    // binding here: Nest keeps one logger per process, the last application's.
    logger: new PinoNestLogger(rootLogger()),
    abortOnError: false,
    forceCloseConnections: true,
  });
  const hotRoutes = (role === 'controller' ? CONTROLLER_HOT_ROUTES : DISPATCHER_HOT_ROUTES).flatMap((provider) => app.get(provider, { strict: false }).routes());
  configureHttp(app, role, config, hotRoutes, ROLE_SCHEMAS[role]);
  return app;
}

export async function migrateRole(role: SchemaRole, config: AppConfig): Promise<string[]> {
  const options = roleDataSourceOptions(
    role,
    { url: config.databaseUrl!, poolSize: 1, migrationsRun: true },
    { entities: [], migrations: SCHEMA_PARTS[role].migrations },
  );
  return runMigrations(options);
}

/** Applies the role's pending migrations (both schemas for `all`) and returns their names. */
export async function migrateOnly(given: AppConfig): Promise<string[]> {
  const embedded = given.databaseUrl ? undefined : await startEmbeddedPostgres(given.dataDir);
  const config = embedded ? { ...given, databaseUrl: embedded.url } : given;
  try {
    const roles: SchemaRole[] = config.role === 'all' ? ['controller', 'dispatcher'] : [config.role];
    const applied: string[] = [];
    for (const role of roles) applied.push(...(await migrateRole(role, config)));
    return applied;
  } finally {
    await embedded?.stop();
  }
}

/**
 * Starts what the role asks for: the embedded database when no DATABASE_URL is set,
 * migrations, then each HTTP server. In the `all` role the controller comes up first so
 * the dispatcher can register with it.
 */
export async function startSystem(given: AppConfig): Promise<RunningSystem> {
  Logger.overrideLogger(new PinoNestLogger(createRootLogger(given.logLevel, logFormatFor(given.logFormat))));
  const logger = new Logger('Boot');
  let embedded: EmbeddedPostgres | undefined;
  let config = given;
  if (!config.databaseUrl) {
    embedded = await startEmbeddedPostgres(config.dataDir);
    config = { ...config, databaseUrl: embedded.url, databasePoolSize: 1, databaseEmbedded: true };
    logger.log(`Embedded PostgreSQL (PGlite) keeps its data in ${config.dataDir}/pg`);
  }
  const roles: SchemaRole[] = config.role === 'all' ? ['controller', 'dispatcher'] : [config.role];
  const apps: Partial<Record<SchemaRole, INestApplication>> = {};
  let agentServer: Server | undefined;
  const close = async (): Promise<void> => {
    if (agentServer) await closeServer(agentServer);
    for (const role of [...roles].reverse()) await apps[role]?.close();
    await embedded?.stop();
  };
  try {
    for (const role of roles) {
      if (config.migrationsRun) {
        const applied = await migrateRole(role, config);
        if (applied.length > 0) logger.log(`Applied ${role} migrations: ${applied.join(', ')}`);
      }
    }
    for (const role of roles) {
      // Everything the role starts here (its providers, its loops' timers) runs in a context
      // that names it, so its log lines do too.
      await requestContext.run({ role }, async () => {
        const app = await createRoleApp(role, config);
        apps[role] = app;
        const port = role === 'controller' ? config.controllerPort : config.dispatcherPort;
        await app.listen(port, config.host);
        applyServerLimits(app.getHttpServer() as Server, config.httpServer);
        logger.log(`${role} listening on http://${config.host}:${port}`);
        if (role === 'dispatcher' && config.agentPort !== null) {
          agentServer = await listenOnAgentPort(app, config);
          logger.log(`agent API listening on http://${config.host}:${config.agentPort}`);
        }
      });
    }
  } catch (error) {
    await close().catch(() => undefined);
    throw error;
  }
  return { config, controller: apps.controller, dispatcher: apps.dispatcher, close };
}
