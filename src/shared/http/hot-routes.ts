import type { IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import { parse as parseQuery, ParsedUrlQuery } from 'node:querystring';
import { match, MatchFunction } from 'path-to-regexp';
import { DomainError } from '../errors/domain-error';
import { tooLarge } from './drain-unread-body';
import { jsonProblem } from './json-guard';
import { withServerSpan } from '../tracing/http-spans';

/** What a hot route's handler gets: the path parameters, the headers, the exact bytes and the parsed JSON. */
export interface HotRequest {
  params: Record<string, string>;
  headers: IncomingHttpHeaders;
  /** The query string parsed as Express 5's default ("simple") parser does. */
  query: ParsedUrlQuery;
  rawBody: Buffer;
  body: unknown;
  /** Why the body was refused (unparsable, or refused by the JSON guard), for a route that takes such bodies. */
  refusal?: unknown;
  /** The client's address, through TRUST_PROXY as Express's `request.ip` is. */
  address: string;
}

export interface HotAnswer {
  status: number;
  body: unknown;
}

/** A POST endpoint answered ahead of Nest's router; `path` is the Nest route's own pattern. */
export interface HotRoute {
  path: string;
  /**
   * When set, a body that is not JSON or that the JSON guard refuses still reaches `handle`,
   * with `refusal` set and no `body`, so the route can keep a record of it before it refuses.
   */
  takesRefusedBodies?: boolean;
  handle(request: HotRequest): Promise<HotAnswer>;
}

/** Where a role's hot routes come from (a provider of that role's module). */
export const HOT_ROUTES = Symbol('HOT_ROUTES');

export type ErrorResponder = (error: unknown, request: IncomingMessage, response: ServerResponse) => void;

export interface HotLaneOptions {
  limitBytes: number;
  respondWithError: ErrorResponder;
  /** What every request gets (id, request context, metrics under `route`, access log, drain); calls `handle` inside it. */
  observe(request: IncomingMessage, response: ServerResponse, route: string, handle: () => void): void;
  /** The client's address as Express would give it (`trust proxy`). */
  addressOf(request: IncomingMessage): string;
}

/**
 * Hot routes: the machine-to-machine endpoints that take most of a busy controller's
 * requests (webhook ingest, task callbacks and progress) are answered by the HTTP server
 * before the request reaches Express. Measured on one machine, a minimal one-route Nest
 * application answers 50-65% of what a bare `node:http` server does, the same route
 * served ahead of Express 70-80%: Express's per-request set-up and route walk, body-parser
 * and Nest's execution context are the difference. This lane calls the same services with
 * the same checks in the same order: body limit, JSON syntax (strict: an object or an
 * array), the JSON guard, then the handler's own authentication and validation. Every
 * request still gets its id, metrics, access log line and drain (`observe`), and errors go
 * through the role's exception filter, so the answers keep the contract's shape.
 *
 * Only the common case takes the lane: POST, `application/json` (or `+json`) in UTF-8, not
 * compressed, with a body, on a path a route matches (case-insensitive, trailing slash
 * optional, as Express matches). Anything else (a form post, a compressed body, another
 * charset or type) goes to Express and the Nest routes, which stay the documented and
 * complete definitions of these endpoints.
 */
export function serveHotRoutesFirst(server: Server, routes: HotRoute[], options: HotLaneOptions): void {
  if (routes.length === 0) return;
  const matchers = routes.map((route) => ({ route, match: match(route.path, { sensitive: false, end: true, trailing: true, decode: decodeURIComponent }) }));
  // Taken before the server's `request` event is emitted: the http instrumentation (when
  // tracing runs) wraps that emit, and the lane makes its server span itself (withServerSpan).
  const emit = server.emit;
  server.emit = function emitAfterHotRoutes(this: Server, event: string | symbol, ...args: unknown[]): boolean {
    if (event === 'request') {
      const [request, response] = args as [IncomingMessage, ServerResponse];
      if (request.method === 'POST' && takesLane(request)) {
        const url = request.url ?? '';
        const mark = url.indexOf('?');
        const [path, query] = mark < 0 ? [url, ''] : [url.slice(0, mark), url.slice(mark + 1)];
        for (const { route, match: matches } of matchers) {
          const hit = matchPath(matches, path);
          if (!hit) continue;
          withServerSpan(request, response, route.path, () => options.observe(request, response, route.path, () => answer(route, hit, query, request, response, options)));
          return true;
        }
      }
    }
    return Reflect.apply(emit, this, [event, ...args]) as boolean;
  } as Server['emit'];
}

function matchPath(matches: MatchFunction<Partial<Record<string, string | string[]>>>, path: string): Record<string, string> | null {
  try {
    const hit = matches(path);
    return hit ? (hit.params as Record<string, string>) : null;
  } catch {
    // A malformed escape (%E0%A4%A): Express answers it.
    return null;
  }
}

function answer(route: HotRoute, params: Record<string, string>, query: string, request: IncomingMessage, response: ServerResponse, options: HotLaneOptions): void {
  readBody(request, options.limitBytes)
    .then((rawBody) => route.handle({ params, headers: request.headers, query: parseQuery(query), rawBody, address: options.addressOf(request), ...parseBody(rawBody, route) }))
    .then(
      (result) => {
        const text = JSON.stringify(result.body);
        response.writeHead(result.status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
        response.end(text);
      },
      (error: unknown) => {
        // A client that left before its body was through is owed no answer and is no server error:
        // the access log's line for it says `request aborted`, as for a request Express was reading.
        if (!request.complete && request.socket.destroyed) return void response.destroy();
        options.respondWithError(error, request, response);
      },
    );
}

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;\s*charset\s*=\s*"?utf-8"?\s*)?$/i;

function takesLane(request: IncomingMessage): boolean {
  const encoding = request.headers['content-encoding'];
  if (encoding !== undefined && encoding.toLowerCase() !== 'identity') return false;
  if (request.headers['content-length'] === '0') return false;
  if (request.headers['content-length'] === undefined && request.headers['transfer-encoding'] === undefined) return false;
  return JSON_TYPE.test(request.headers['content-type'] ?? '');
}

/** A syntax error shaped as body-parser's, so the role's error mapping answers it as it answers those. */
function parseError(message: string): Error {
  return Object.assign(new Error(message), { type: 'entity.parse.failed', status: 400, statusCode: 400, expose: true });
}

/** The bytes of the body, within `limitBytes` (over it: 413 at once). */
function readBody(request: IncomingMessage, limitBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(request.headers['content-length']);
    if (Number.isFinite(declared) && declared > limitBytes) {
      reject(tooLarge());
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let refused = false;
    request.on('data', (chunk: Buffer) => {
      if (refused) return;
      size += chunk.length;
      if (size > limitBytes) {
        refused = true;
        chunks.length = 0;
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    });
    request.on('error', reject);
    request.on('end', () => {
      if (!refused) resolve(Buffer.concat(chunks, size));
    });
  });
}

/** The parsed body, or (for a route that takes refused bodies) why it was refused. */
function parseBody(rawBody: Buffer, route: HotRoute): { body: unknown; refusal?: unknown } {
  try {
    return { body: parseJson(rawBody) };
  } catch (refusal) {
    if (!route.takesRefusedBodies) throw refusal;
    return { body: undefined, refusal };
  }
}

/** The characters body-parser's strict mode skips before the first one it checks (JSON's whitespace only). */
const FIRST_CHAR = /^[ \t\n\r]*([^ \t\n\r])/;

/**
 * The body parsed as body-parser's strict JSON parser would: a UTF-8 byte order mark is
 * dropped (its decoder does), an empty body is `{}`, a body of whitespace or one that starts
 * with anything but an object or an array is a parse error. Parts PostgreSQL cannot store (or
 * nested past the limit) are refused as the JSON guard refuses them.
 */
function parseJson(rawBody: Buffer): unknown {
  let text = rawBody.toString('utf8');
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  if (text.length === 0) return {};
  const first = FIRST_CHAR.exec(text)?.[1];
  if (first !== '{' && first !== '[') throw parseError('not a JSON object or array');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw parseError(error instanceof Error ? error.message : 'invalid JSON');
  }
  const problem = jsonProblem(body);
  if (problem) throw DomainError.invalid({ [problem.field]: [problem.message] });
  return body;
}
