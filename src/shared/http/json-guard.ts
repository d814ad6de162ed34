import type { NextFunction, Request, Response } from 'express';
import { DomainError } from '../errors/domain-error';

/** JSON nested deeper than this is refused (CONTRACT section 4): validators and PostgreSQL recurse into it. */
export const MAX_JSON_DEPTH = 64;

/** A UTF-16 surrogate without its other half: JSON allows it, UTF-8 and PostgreSQL cannot hold it. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export interface JsonProblem {
  field: string;
  message: string;
}

function textProblem(text: string): string | null {
  if (text.includes('\u0000')) return 'contains a NUL character, which cannot be stored';
  if (LONE_SURROGATE.test(text)) return 'contains a lone UTF-16 surrogate, which is not valid Unicode text';
  return null;
}

/**
 * The first part of a parsed JSON body that no endpoint can take, named by its dotted path:
 * nesting past MAX_JSON_DEPTH, or text PostgreSQL cannot store (NUL, lone surrogates) in a
 * value or a key. One walk, in one place, for every endpoint of both roles, so no validator
 * or query ever meets such input. Keys such as `constructor` are taken (see
 * validation/reserved-keys.ts).
 */
export function jsonProblem(value: unknown, path = '', depth = 0): JsonProblem | null {
  const field = path || 'body';
  if (typeof value === 'string') {
    const message = textProblem(value);
    return message ? { field, message } : null;
  }
  if (value === null || typeof value !== 'object') return null;
  if (depth >= MAX_JSON_DEPTH) return { field, message: `is nested deeper than ${MAX_JSON_DEPTH} levels` };
  const entries: [string, unknown][] = Array.isArray(value) ? value.map((item, index) => [String(index), item]) : Object.entries(value);
  for (const [key, item] of entries) {
    const child = path ? `${path}.${key}` : key;
    const keyMessage = textProblem(key);
    if (keyMessage) return { field: child, message: `has a key that ${keyMessage}` };
    const problem = jsonProblem(item, child, depth + 1);
    if (problem) return problem;
  }
  return null;
}

/** Refuses a parsed body with such a part: 400 `invalid`, naming the field. */
export function refuseUnstorableJson(request: Request, _response: Response, next: NextFunction): void {
  if (request.body === null || typeof request.body !== 'object' || Buffer.isBuffer(request.body)) return next();
  const problem = jsonProblem(request.body);
  if (!problem) return next();
  next(DomainError.invalid({ [problem.field]: [problem.message] }));
}
