import type { Middleware } from 'openapi-fetch';

/** One non-GET call a typed client made, as the audit trail should show it. */
export interface StateChangingCall {
  method: string;
  /** The document's path template, e.g. `/api/v1/tasks/{guid}/cancel`. */
  template: string;
  url: string;
  status: number;
  authorization: string | null;
  answer: unknown;
}

const SECRET_FIELD = /secret|token|key|password/i;

/**
 * Watches a typed client: each non-GET call in order, and every secret that passed either
 * way (credentials in headers, and the values of secret-looking fields in JSON bodies:
 * client secrets, access tokens, subscription secrets, api keys), for a spec to look for.
 */
export class AuditCalls {
  readonly calls: StateChangingCall[] = [];
  readonly secrets = new Set<string>();

  middleware(): Middleware {
    return {
      onRequest: async ({ request }) => {
        const authorization = request.headers.get('authorization');
        if (authorization) this.secrets.add(authorization.replace(/^\S+\s+/, ''));
        if ((request.headers.get('content-type') ?? '').includes('json')) this.collect(await request.clone().text());
        return undefined;
      },
      onResponse: async ({ request, response, schemaPath }) => {
        const text = (response.headers.get('content-type') ?? '').includes('json') ? await response.clone().text() : '';
        this.collect(text);
        if (request.method === 'GET') return undefined;
        this.calls.push({
          method: request.method,
          template: schemaPath,
          url: request.url,
          status: response.status,
          authorization: request.headers.get('authorization'),
          answer: text ? JSON.parse(text) : null,
        });
        return undefined;
      },
    };
  }

  private collect(text: string): void {
    if (!text) return;
    try {
      walk(JSON.parse(text), (name, value) => {
        if (SECRET_FIELD.test(name) && typeof value === 'string' && value.length >= 8) this.secrets.add(value);
      });
    } catch {
      // Not JSON after all (a refused body): nothing to collect.
    }
  }
}

function walk(value: unknown, visit: (name: string, value: unknown) => void): void {
  if (Array.isArray(value)) return value.forEach((item) => walk(item, visit));
  if (typeof value !== 'object' || value === null) return;
  for (const [name, inner] of Object.entries(value)) {
    visit(name, inner);
    walk(inner, visit);
  }
}

/** The value of the first `{param}` of `template` in `url`'s path. */
export function firstPathParam(template: string, url: string): string | null {
  const names = template.split('/');
  const values = new URL(url).pathname.replace(/\/$/, '').split('/');
  const at = names.findIndex((part) => part.startsWith('{'));
  return at >= 0 ? decodeURIComponent(values[at]) : null;
}
