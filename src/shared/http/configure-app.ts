import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { INestApplication } from '@nestjs/common';
import { SwaggerModule } from '@nestjs/swagger';
import express, { NextFunction, Request, RequestHandler, Response } from 'express';
import { match } from 'path-to-regexp';
import proxyaddr from 'proxy-addr';
import { AppConfig } from '../config/config';
import { DomainError } from '../errors/domain-error';
import { ControllerExceptionFilter, DispatcherExceptionFilter } from '../errors/exception-filters';
import { createValidationPipe } from '../errors/validation';
import { requestContext } from '../logging/request-context';
import { activeServerSpan, nameServerSpan } from '../tracing/http-spans';
import { carrierOf } from '../tracing/trace-context';
import { recordHttpRequest } from '../metrics/metrics';
import { AccessLog, createAccessLog } from './access-log';
import { answerOverLimitAtOnce, drainUnreadBody } from './drain-unread-body';
import { serveConsole } from '../../controller/console/console-static';
import { HotRoute, serveHotRoutesFirst } from './hot-routes';
import { buildOpenApiDocument } from './openapi';
import type { SchemaObject } from './openapi-schema';
import { refuseUnstorableJson } from './json-guard';
import { agentPathsOnMainPort } from '../../dispatcher/agent/agent-port';

export type HttpRole = 'controller' | 'dispatcher';

/** The raw request bytes, kept for signature checks (callbacks, webhooks). */
export interface RawBodyRequest extends Request {
  rawBody?: Buffer;
  /** Why the body was refused, on a route that takes refused bodies (see `HotRoute.takesRefusedBodies`). */
  bodyRefusal?: unknown;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const BODY_TYPES = ['application/json', 'application/*+json', 'application/x-www-form-urlencoded', 'multipart/form-data'];

function keepRawBody(request: RawBodyRequest, _response: Response, buffer: Buffer): void {
  request.rawBody = buffer;
}

/** Everything both roles' HTTP servers share: ids, logs, metrics, bodies, errors, docs. */
export function configureHttp(
  app: INestApplication,
  role: HttpRole,
  config: AppConfig,
  hotRoutes: HotRoute[] = [],
  schemas: Record<string, SchemaObject> = {},
): void {
  const http = app.getHttpAdapter().getInstance() as express.Express;
  http.disable('x-powered-by');
  http.set('trust proxy', config.trustProxy);

  const accessLog = createAccessLog();
  const observe = (request: IncomingMessage, response: ServerResponse, routeOf: () => string, next: () => void) =>
    observeRequest(role, accessLog, request, response, routeOf, next);
  app.use((request: Request, response: Response, next: NextFunction) => observe(request, response, () => expressRoute(request), next));
  if (role === 'dispatcher') {
    app.use(agentPathsOnMainPort(config));
    // Agents PUT result objects of any type; the bytes are stored as they come.
    app.use('/agent/objects', answerOverLimitAtOnce(express.raw({ type: () => true, limit: config.maxPackageBytes }), config.maxPackageBytes, () => true));
  }
  const errors = role === 'controller' ? new ControllerExceptionFilter() : new DispatcherExceptionFilter();
  // Off, the same routes still keep refused bodies for their handlers on the Express path below.
  serveHotRoutesFirst(app.getHttpServer() as Server, config.httpHotLane ? hotRoutes : [], {
    limitBytes: config.maxJsonBytes,
    respondWithError: (error, request, response) => errors.respond(error, request, response),
    observe: (request, response, route, handle) => observe(request, response, () => route, handle),
    addressOf: (request) => proxyaddr(request, http.get('trust proxy fn') as (address: string, hop: number) => boolean),
  });
  if (role === 'controller') serveConsole(app, { trace_url_template: config.traceUrlTemplate });
  app.use(refuseUnknownBodyTypes);
  const json = ['application/json', 'application/*+json'];
  const form = 'application/x-www-form-urlencoded';
  const keeps = refusalKeeper(hotRoutes);
  app.use(keepRefusal(answerOverLimitAtOnce(express.json({ limit: config.maxJsonBytes, type: json, verify: keepRawBody }), config.maxJsonBytes, (r) => !!r.is(json)), keeps));
  app.use(keepRefusal(answerOverLimitAtOnce(express.urlencoded({ limit: config.maxJsonBytes, extended: false, verify: keepRawBody }), config.maxJsonBytes, (r) => !!r.is(form)), keeps));
  app.use(keepRefusal(refuseUnstorableJson, keeps));

  app.useGlobalFilters(errors);
  app.useGlobalPipes(createValidationPipe());

  const document = buildOpenApiDocument(app, role, config, schemas);
  SwaggerModule.setup('api/docs', app, document, { jsonDocumentUrl: 'api/docs/openapi.json' });
}

/** Whether a request is for a route that takes refused bodies: the same paths on Express as on the hot lane. */
function refusalKeeper(hotRoutes: HotRoute[]): (request: Request) => boolean {
  const matchers = hotRoutes
    .filter((route) => route.takesRefusedBodies)
    .map((route) => match(route.path, { sensitive: false, end: true, trailing: true }));
  if (matchers.length === 0) return () => false;
  return (request) => request.method === 'POST' && matchers.some((matches) => {
    try {
      return matches(request.path) !== false;
    } catch {
      return false;
    }
  });
}

/**
 * A body parser or guard whose refusal of a body (unparsable, or refused by the JSON guard)
 * is kept on the request for such a route's handler rather than answered here; other
 * errors (too large, unsupported charset) are answered as usual.
 */
function keepRefusal(middleware: RequestHandler, keeps: (request: Request) => boolean): RequestHandler {
  return (request: RawBodyRequest, response, next) =>
    middleware(request, response, (error?: unknown) => {
      if (!error || !keeps(request) || !isBodyRefusal(error)) return next(error);
      request.bodyRefusal = error;
      request.body = undefined;
      next();
    });
}

function isBodyRefusal(error: unknown): boolean {
  if (error instanceof DomainError) return error.code === 'invalid';
  return (error as { type?: string }).type === 'entity.parse.failed';
}

/** A body the server cannot read is 415 before any handler runs. */
function refuseUnknownBodyTypes(request: Request, _response: Response, next: NextFunction): void {
  const hasBody = Number(request.headers['content-length'] ?? 0) > 0 || request.headers['transfer-encoding'] !== undefined;
  if (!hasBody || Buffer.isBuffer(request.body) || ['GET', 'HEAD', 'DELETE', 'OPTIONS'].includes(request.method)) return next();
  const type = request.headers['content-type'];
  if (type && BODY_TYPES.some((allowed) => request.is(allowed))) return next();
  const wanted = /\/upload\/?$/.test(request.path) ? 'multipart/form-data with the package in the part "file"' : 'application/json';
  next(new DomainError('unsupported_media_type', `Content-Type ${type ? `"${type.split(';')[0]}"` : '(none)'} is not supported here; send ${wanted}.`));
}

/**
 * What every request gets, on the Express routes and the hot lane alike: its id (and the
 * context its log lines carry), its access log line (`access-log.ts`, inside that context), and,
 * once answered, its metrics under its route pattern and the drain of a body left unread.
 */
function observeRequest(
  role: HttpRole,
  accessLog: AccessLog,
  request: IncomingMessage,
  response: ServerResponse,
  routeOf: () => string,
  next: () => void,
): void {
  const given = request.headers['x-request-id'];
  const requestId = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
  response.setHeader('X-Request-Id', requestId);
  const started = process.hrtime.bigint();
  const serverSpan = activeServerSpan();
  response.once('finish', () => {
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const route = routeOf();
    recordHttpRequest(role, request.method ?? '', route, response.statusCode, seconds);
    if (serverSpan) nameServerSpan(serverSpan, request.method ?? '', route);
    drainUnreadBody(request);
  });
  const incomingTrace = carrierOf(request.headers.traceparent, request.headers.tracestate) ?? undefined;
  requestContext.run({ requestId, role, incomingTrace }, () => accessLog(request, response, next));
}

/** The route pattern Express matched, never the raw path (which holds ids). */
function expressRoute(request: Request): string {
  const routePath = (request.route as { path?: string } | undefined)?.path;
  return routePath ? `${request.baseUrl}${routePath}` : 'unmatched';
}
