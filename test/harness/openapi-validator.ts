import Ajv, { ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { Middleware } from 'openapi-fetch';

type Json = any;

/**
 * Checks real answers against an OpenAPI document: the status must be documented for the
 * operation, its documented challenge headers present, its media type documented and a JSON
 * body valid against the documented schema (ajv, OpenAPI 3.0 `nullable` included).
 * `middleware()` plugs it into an openapi-fetch client, which names the path template.
 */
export class ResponseValidator {
  readonly seen = new Map<string, Set<number>>();
  readonly problems: string[] = [];
  private readonly ajv = new Ajv({ strict: false, allErrors: true });
  private readonly compiled = new Map<string, ValidateFunction>();
  private readonly paths: Json;

  constructor(document: Json) {
    addFormats(this.ajv);
    const rewritten = JSON.parse(JSON.stringify(document).replaceAll('"#/components/schemas/', '"components#/definitions/'));
    this.ajv.addSchema({ $id: 'components', definitions: rewritten.components.schemas });
    this.paths = rewritten.paths;
  }

  middleware(): Middleware {
    return { onResponse: async ({ request, response, schemaPath }) => void (await this.check(request.method, schemaPath, response.clone())) };
  }

  /** Every operation of the document that no answer was seen for with a 2xx status. */
  operationsWithoutSuccess(): string[] {
    return Object.entries(this.paths).flatMap(([path, item]: [string, Json]) =>
      Object.keys(item).filter((method) => method !== 'parameters')
        .map((method) => `${method.toUpperCase()} ${path}`)
        .filter((name) => ![...(this.seen.get(name) ?? [])].some((status) => status < 300)));
  }

  async check(method: string, path: string, response: Response): Promise<void> {
    const name = `${method.toUpperCase()} ${path}`;
    const statuses = this.seen.get(name) ?? new Set<number>();
    this.seen.set(name, statuses.add(response.status));
    const documented = this.paths[path]?.[method.toLowerCase()]?.responses?.[String(response.status)];
    if (!documented) return void this.problems.push(`${name}: answered ${response.status}, which the document does not name`);
    for (const header of Object.keys(documented.headers ?? {})) {
      if (['www-authenticate', 'retry-after'].includes(header.toLowerCase()) && !response.headers.has(header)) {
        this.problems.push(`${name} ${response.status}: no ${header} header`);
      }
    }
    const mediaType = (response.headers.get('content-type') ?? '').split(';')[0].trim();
    // An event stream's body never ends: its status, headers and media type are what can be checked.
    if (mediaType === 'text/event-stream') {
      if (!documented.content?.[mediaType]) this.problems.push(`${name} ${response.status}: ${mediaType}, not one the document names`);
      // `response` is a clone, one branch of a tee of the body: until this branch is cancelled too,
      // the caller's cancel() of its own branch waits for the server to end the stream (90 s).
      // Not awaited: this branch's cancel in turn waits for the caller's.
      void response.body?.cancel();
      return;
    }
    const text = await response.text();
    if (!documented.content) {
      if (text) this.problems.push(`${name} ${response.status}: a body the document does not name`);
      return;
    }
    const content = documented.content[mediaType];
    if (!content) return void this.problems.push(`${name} ${response.status}: ${mediaType || 'no content type'}, not one the document names`);
    if (mediaType !== 'application/json') return;
    const validate = this.validator(`${name} ${response.status}`, content.schema);
    if (!validate(JSON.parse(text))) {
      this.problems.push(`${name} ${response.status}: ${this.ajv.errorsText(validate.errors)} in ${text.slice(0, 300)}`);
    }
  }

  private validator(key: string, schema: Json): ValidateFunction {
    let validate = this.compiled.get(key);
    if (!validate) this.compiled.set(key, (validate = this.ajv.compile(schema)));
    return validate;
  }
}
