import { request as httpRequest } from 'node:http';
import fc, { Arbitrary } from 'fast-check';

/** The parts of an OpenAPI 3 document the fuzz reads. */
type Schema = Record<string, any>;
export interface OpenApiDocument {
  paths: Record<string, Record<string, Schema>>;
  components?: { schemas?: Record<string, Schema> };
}

/** One write operation of a served document: what the fuzz sends to. */
export interface WriteOperation {
  method: string;
  path: string;
  pathParams: string[];
  /** Media types of the request body the document declares (none: the operation takes no body). */
  mediaTypes: string[];
  bodySchema: Schema | null;
  security: string[];
}

const WRITE_METHODS = ['post', 'put', 'patch'];

/** Every POST, PUT and PATCH of the document, so an operation added to the API is fuzzed with no edit here. */
export function writeOperations(document: OpenApiDocument): WriteOperation[] {
  const operations: WriteOperation[] = [];
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      if (!WRITE_METHODS.includes(method)) continue;
      const content: Record<string, Schema> = operation.requestBody?.content ?? {};
      const mediaTypes = Object.keys(content);
      const json = mediaTypes.find((type) => type.includes('json'));
      operations.push({
        method: method.toUpperCase(),
        path,
        pathParams: ((operation.parameters ?? []) as Schema[]).filter((parameter) => parameter.in === 'path').map((parameter) => parameter.name),
        mediaTypes,
        bodySchema: json ? content[json].schema ?? null : null,
        security: ((operation.security ?? []) as Record<string, unknown>[]).flatMap((requirement) => Object.keys(requirement)),
      });
    }
  }
  return operations;
}

const text = fc.string({ unit: 'grapheme', maxLength: 24 });

/** Values the schema allows (as far as its keywords go): the start from which bodies are bent. */
export function arbitraryFor(schema: Schema | undefined, document: OpenApiDocument, depth = 0): Arbitrary<unknown> {
  if (!schema || depth > 6) return fc.constant(null);
  if (schema.$ref) return arbitraryFor(document.components?.schemas?.[String(schema.$ref).split('/').pop()!], document, depth + 1);
  const nullable = (value: Arbitrary<unknown>) => (schema.nullable ? fc.option(value, { nil: null }) : value);
  if (schema.enum) return nullable(fc.constantFrom(...(schema.enum as unknown[])));
  if (schema.const !== undefined) return fc.constant(schema.const);
  const choices = schema.oneOf ?? schema.anyOf;
  if (choices) return nullable(fc.oneof(...(choices as Schema[]).map((choice) => arbitraryFor(choice, document, depth + 1))));
  if (schema.allOf) return arbitraryFor(mergeAll(schema.allOf, document), document, depth + 1);
  switch (Array.isArray(schema.type) ? schema.type[0] : schema.type) {
    case 'string':
      return nullable(stringFor(schema));
    case 'integer':
      return nullable(fc.integer({ min: schema.minimum ?? -1000, max: schema.maximum ?? 100000 }));
    case 'number':
      return nullable(fc.double({ min: schema.minimum ?? -1000, max: schema.maximum ?? 100000, noNaN: true }));
    case 'boolean':
      return nullable(fc.boolean());
    case 'array':
      return nullable(fc.array(arbitraryFor(schema.items, document, depth + 1), { minLength: schema.minItems ?? 0, maxLength: Math.min(schema.maxItems ?? 3, 3) }));
    default:
      return nullable(objectFor(schema, document, depth));
  }
}

function mergeAll(parts: Schema[], document: OpenApiDocument): Schema {
  const resolved = parts.map((part) => (part.$ref ? document.components?.schemas?.[String(part.$ref).split('/').pop()!] ?? {} : part));
  return {
    type: 'object',
    properties: Object.assign({}, ...resolved.map((part) => part.properties ?? {})),
    required: resolved.flatMap((part) => part.required ?? []),
  };
}

function stringFor(schema: Schema): Arbitrary<string> {
  switch (schema.format) {
    case 'uuid':
      return fc.uuid();
    case 'date-time':
      return fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }).map((date) => date.toISOString());
    case 'uri':
      return fc.webUrl();
    default:
      return schema.pattern ? fc.stringMatching(new RegExp(schema.pattern)).map((value) => value.slice(0, schema.maxLength ?? 200)) : text;
  }
}

function objectFor(schema: Schema, document: OpenApiDocument, depth: number): Arbitrary<unknown> {
  const properties: Record<string, Schema> = schema.properties ?? {};
  if (Object.keys(properties).length === 0) {
    const values = schema.additionalProperties && schema.additionalProperties !== true ? arbitraryFor(schema.additionalProperties, document, depth + 1) : fc.jsonValue({ maxDepth: 2 });
    return fc.dictionary(text, values, { maxKeys: 3 });
  }
  const model = Object.fromEntries(Object.entries(properties).map(([name, property]) => [name, arbitraryFor(property, document, depth + 1)]));
  return fc.record(model, { requiredKeys: (schema.required ?? []).filter((name: string) => name in model) });
}

/** A leaf that PostgreSQL, JSON or a number parser may choke on. */
export const hostileLeaf: Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom('a\u0000b', 'x\ud800', 1e308, -0, '', ' ', '9007199254740993', { constructor: { x: 1 } }, [[[[[]]]]]),
  fc.double(),
);

/** Every leaf of a value, as a path of keys. */
function leaves(value: unknown, path: string[] = []): string[][] {
  if (value === null || typeof value !== 'object') return [path];
  const entries = Object.entries(value);
  if (entries.length === 0) return [path];
  return entries.flatMap(([key, item]) => leaves(item, [...path, key]));
}

function withLeaf(value: unknown, path: string[], leaf: unknown): unknown {
  if (path.length === 0) return leaf;
  const copy = structuredClone(value) as Record<string, unknown>;
  let node = copy;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string, unknown>;
  node[path[path.length - 1]] = leaf;
  return copy;
}

/** JSON text for an operation: a schema-shaped body, the same with one leaf bent, or any JSON at all. */
export function jsonBodyFor(operation: WriteOperation, document: OpenApiDocument): Arbitrary<string> {
  const shaped = operation.bodySchema ? arbitraryFor(operation.bodySchema, document) : fc.jsonValue({ maxDepth: 3 });
  const bent = fc.tuple(shaped, fc.nat(), hostileLeaf).map(([value, pick, leaf]) => {
    const paths = leaves(value);
    return withLeaf(value, paths[pick % paths.length], leaf);
  });
  const nested = fc.integer({ min: 60, max: 3000 }).map((depth) => '['.repeat(depth) + ']'.repeat(depth));
  return fc.oneof(
    { weight: 3, arbitrary: shaped.map((value) => JSON.stringify(value)) },
    { weight: 4, arbitrary: bent.map((value) => JSON.stringify(value) ?? 'null') },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((value) => JSON.stringify(value)) },
    { weight: 1, arbitrary: nested },
  );
}

/** A form body for the same operation: the top-level fields of a generated JSON body, URL-encoded. */
export function formOf(json: string): string {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return json;
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) return '';
  const pairs = Object.entries(value).map(([key, item]): [string, string] => [key, typeof item === 'string' ? item : String(JSON.stringify(item))]);
  return new URLSearchParams(pairs).toString();
}

export interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  body: unknown;
}

/** Sends the bytes as given: with Content-Length, or chunked (no length) when `chunked` is set. */
export function sendRaw(url: string, method: string, headers: Record<string, string>, body: Buffer | string, chunked = false): Promise<RawAnswer> {
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8');
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(url, { method, headers: { ...headers, ...(chunked ? { 'transfer-encoding': 'chunked' } : { 'content-length': String(bytes.length) }) } }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown = text;
        try {
          parsed = text ? JSON.parse(text) : null;
        } catch {
          // not JSON: the text itself
        }
        resolve({ status: response.statusCode ?? 0, headers: response.headers, text, body: parsed });
      });
      response.on('error', reject);
    });
    outgoing.on('error', reject);
    if (chunked) {
      // Two chunks where there is anything to split, so the server really reassembles the body.
      const middle = Math.floor(bytes.length / 2);
      if (middle > 0) outgoing.write(bytes.subarray(0, middle));
      outgoing.end(bytes.subarray(middle));
    } else {
      outgoing.end(bytes);
    }
  });
}
