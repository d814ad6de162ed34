import type { IncomingHttpHeaders } from 'node:http';
import type { Express, NextFunction, Request, Response } from 'express';
import { DomainError } from '../errors/domain-error';
import { tooLarge } from './drain-unread-body';
import { jsonProblem } from './json-guard';

/** What a hot route's handler gets: the path parameters, the headers, the exact bytes and the parsed JSON. */
export interface HotRequest {
  params: Record<string, string>;
  headers: IncomingHttpHeaders;
  rawBody: Buffer;
  body: unknown;
}

export interface HotAnswer {
  status: number;
  body: unknown;
}

/** A POST endpoint answered ahead of Nest's router; `path` is the Nest route's own pattern. */
export interface HotRoute {
  path: string;
  handle(request: HotRequest): Promise<HotAnswer>;
}

/** Where a role's hot routes come from (a provider of that role's module). */
export const HOT_ROUTES = Symbol('HOT_ROUTES');

export type ErrorResponder = (error: unknown, request: Request, response: Response) => void;

/**
 * Hot routes: the machine-to-machine endpoints that take most of a busy controller's
 * requests (webhook ingest, task callbacks and progress) are served by a plain Express
 * handler mounted ahead of the body parsers and Nest's router. A minimal one-route Nest
 * application answers 50-65% of what a bare `node:http` server does on the same machine
 * (Express walking its route table, body-parser, Nest's execution context); this lane
 * skips those layers and calls the same services, with the same checks in the same order:
 * body limit, JSON syntax (strict: an object or array), the JSON guard, then the
 * handler's own authentication and validation. Errors go through the role's error
 * responder, so the answer is byte for byte the shape the Nest route gives.
 *
 * Only the common case takes the lane: `application/json` (or `+json`) in UTF-8, not
 * compressed, with a body. Anything else (a form post, a compressed body, another charset,
 * a wrong content type) falls through to the Nest route, which stays the documented and
 * complete definition of the endpoint.
 */
export function mountHotRoutes(http: Express, routes: HotRoute[], limitBytes: number, respondWithError: ErrorResponder): void {
  for (const route of routes) {
    http.post(route.path, (request: Request, response: Response, next: NextFunction) => {
      if (!takesLane(request)) return next();
      readJson(request, limitBytes)
        .then(({ rawBody, body }) => route.handle({ params: request.params as Record<string, string>, headers: request.headers, rawBody, body }))
        .then(
          (answer) => {
            const text = JSON.stringify(answer.body);
            response.writeHead(answer.status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
            response.end(text);
          },
          (error: unknown) => respondWithError(error, request, response),
        );
    });
  }
}

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;\s*charset\s*=\s*"?utf-8"?\s*)?$/i;

function takesLane(request: Request): boolean {
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

/**
 * The body, within `limitBytes`, parsed as body-parser's strict JSON parser would: empty is
 * `{}`, anything but an object or an array is a parse error. Parts PostgreSQL cannot store
 * (or nested past the limit) are refused as the JSON guard refuses them.
 */
function readJson(request: Request, limitBytes: number): Promise<{ rawBody: Buffer; body: unknown }> {
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
      if (refused) return;
      const rawBody = Buffer.concat(chunks, size);
      const text = rawBody.toString('utf8');
      const start = /\S/.exec(text);
      if (!start) return resolve({ rawBody, body: {} });
      if (start[0] !== '{' && start[0] !== '[') return reject(parseError('not a JSON object or array'));
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch (error) {
        return reject(parseError(error instanceof Error ? error.message : 'invalid JSON'));
      }
      const problem = jsonProblem(body);
      if (problem) return reject(DomainError.invalid({ [problem.field]: [problem.message] }));
      resolve({ rawBody, body });
    });
  });
}
