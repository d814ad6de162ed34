/**
 * What never reaches a log line: a field named for a credential, on the line itself or one
 * level down (`{ body: { callback_token } }`), and the credential headers of a logged request
 * or response (`req.headers`, `res.headers`).
 *
 * pino's own `redact` did this until it was measured: its redactor (@pinojs/redact 0.4) parses
 * every path again on every call, and a path starting with `*` makes it run for every field of
 * every line. That was an eighth of what the server allocated in a burst of tasks, for lines
 * that almost never hold a secret. This looks at each field once and copies only what it
 * censors; the caller's objects are never changed. It runs as pino's `formatters.log`, on
 * every line's fields; a child logger's own bindings are not lines' fields (pino writes them
 * once, at the child's creation), and the project binds nothing but a context name there.
 */
export const CENSORED = '[redacted]';

/** Field names whose values are censored wherever a line or its first level holds them. */
export const SECRET_FIELDS: ReadonlySet<string> = new Set(['callback_token', 'client_secret', 'api_key', 'access_token', 'password', 'secret', 'token']);

/** Header names whose values are censored in a logged request's or response's `headers`. */
export const SECRET_HEADERS: ReadonlySet<string> = new Set(['authorization', 'x-api-key', 'x-agent-key', 'cookie', 'x-service-signature', 'set-cookie']);

/** `line` with every secret field and header censored: `line` itself when it holds none. */
export function censorSecrets(line: Record<string, unknown>): Record<string, unknown> {
  let out = line;
  for (const key in line) {
    const value = line[key];
    let censored: unknown = value;
    if (SECRET_FIELDS.has(key)) censored = CENSORED;
    else if (isRecord(value)) censored = censorFields(value, (key === 'req' || key === 'res') && isRecord(value.headers));
    if (censored === value) continue;
    if (out === line) out = { ...line };
    out[key] = censored;
  }
  return out;
}

/** `value` with its secret fields censored (and, for a request or response, its secret headers): `value` itself when it holds none. */
function censorFields(value: Record<string, unknown>, withHeaders: boolean): Record<string, unknown> {
  let out = value;
  for (const key in value) {
    const field = value[key];
    let censored: unknown = field;
    if (SECRET_FIELDS.has(key)) censored = CENSORED;
    else if (withHeaders && key === 'headers') censored = censorHeaders(field as Record<string, unknown>);
    if (censored === field) continue;
    if (out === value) out = { ...value };
    out[key] = censored;
  }
  return out;
}

function censorHeaders(headers: Record<string, unknown>): Record<string, unknown> {
  let out = headers;
  for (const name in headers) {
    if (!SECRET_HEADERS.has(name.toLowerCase())) continue;
    if (out === headers) out = { ...headers };
    out[name] = CENSORED;
  }
  return out;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value) && !(value instanceof Error) && !Buffer.isBuffer(value);
}
