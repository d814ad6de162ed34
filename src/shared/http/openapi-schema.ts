import type { OpenAPIObject } from '@nestjs/swagger';

type Components = NonNullable<OpenAPIObject['components']>;
type PathItem = OpenAPIObject['paths'][string];
/** A schema (or a `$ref`), as @nestjs/swagger types them (its spec types are not exported). */
export type SchemaObject = Exclude<NonNullable<Components['schemas']>[string], { $ref: string }> & { $ref?: string };
export type OperationObject = NonNullable<PathItem['get']>;
export type ResponseObject = Exclude<NonNullable<OperationObject['responses'][string]>, { $ref: string }>;

/** Short builders for the response schemas each role's `*.openapi.ts` declares. */
export const ref = (name: string): SchemaObject => ({ $ref: `#/components/schemas/${name}` }) as SchemaObject;
export const text = (extra: SchemaObject = {}): SchemaObject => ({ type: 'string', ...extra });
export const nullableText = (extra: SchemaObject = {}): SchemaObject => ({ type: 'string', nullable: true, ...extra });
export const integer = (extra: SchemaObject = {}): SchemaObject => ({ type: 'integer', ...extra });
export const nullableInteger = (extra: SchemaObject = {}): SchemaObject => ({ type: 'integer', nullable: true, ...extra });
export const time = (): SchemaObject => ({ type: 'string', format: 'date-time' });
export const nullableTime = (): SchemaObject => ({ type: 'string', format: 'date-time', nullable: true });
export const uuid = (): SchemaObject => ({ type: 'string', format: 'uuid' });
export const bool = (): SchemaObject => ({ type: 'boolean' });
export const anyObject = (extra: SchemaObject = {}): SchemaObject => ({ type: 'object', additionalProperties: true, ...extra });
export const stringMap = (): SchemaObject => ({ type: 'object', additionalProperties: { type: 'string' } });
export const list = (items: SchemaObject): SchemaObject => ({ type: 'array', items });

/** An object whose listed properties are all present in every answer (some may be null). */
export function record(properties: Record<string, SchemaObject>, optional: string[] = []): SchemaObject {
  return { type: 'object', required: Object.keys(properties).filter((name) => !optional.includes(name)), properties };
}

/** The controller's list envelope `{count, next, previous, results}` (with `count_estimated` on keyset lists). */
export function page(item: string, keyset: boolean): SchemaObject {
  return record({
    count: integer({ minimum: 0 }),
    ...(keyset ? { count_estimated: bool() } : {}),
    next: nullableText({ format: 'uri' }),
    previous: nullableText({ format: 'uri' }),
    results: list(ref(item)),
  });
}
