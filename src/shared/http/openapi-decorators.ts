import { applyDecorators } from '@nestjs/common';
import { ApiResponse } from '@nestjs/swagger';
import { ref, SchemaObject } from './openapi-schema';

type Headers = Record<string, { description: string; schema: SchemaObject }>;

/** A success answer whose JSON body is the named component (or a schema given inline). */
export function Answers(status: number, schema: string | SchemaObject, description: string, headers?: Headers) {
  return ApiResponse({
    status,
    description,
    headers,
    content: { 'application/json': { schema: typeof schema === 'string' ? ref(schema) : schema } },
  });
}

/** A success answer of another media type (a file, plain text). */
export function AnswersWith(status: number, mediaType: string, description: string, headers?: Headers) {
  const schema: SchemaObject = mediaType.startsWith('text/') ? { type: 'string' } : { type: 'string', format: 'binary' };
  return ApiResponse({ status, description, headers, content: { [mediaType]: { schema } } });
}

/** An answer without a body (204, 304). */
export function AnswersEmpty(status: number, description: string, headers?: Headers) {
  return ApiResponse({ status, description, headers });
}

/**
 * The refusals an endpoint adds to those every endpoint shares; the role's error body is
 * filled in when the document is built (`completeOperations`).
 */
export function Refuses(refusals: Record<number, string>) {
  return applyDecorators(...Object.entries(refusals).map(([status, description]) => ApiResponse({ status: Number(status), description })));
}

