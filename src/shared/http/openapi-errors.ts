import type { SchemaObject } from './openapi-schema';

/** The error bodies of CONTRACT section 1, as components of both documents. */
export const ERROR_SCHEMAS: Record<string, SchemaObject> = {
  ControllerError: {
    type: 'object',
    required: ['detail', 'code'],
    properties: {
      detail: { type: 'string', description: 'What went wrong, as a sentence' },
      code: { type: 'string', example: 'invalid' },
      errors: { type: 'object', additionalProperties: { type: 'array', items: { type: 'string' } }, description: 'Per field, for validation errors' },
      error_id: { type: 'string', description: 'For server errors: the id the log line carries too' },
    },
  },
  DispatcherError: {
    type: 'object',
    required: ['ok', 'error'],
    properties: {
      ok: { type: 'boolean', enum: [false] },
      error: {
        type: 'object',
        required: ['code', 'message'],
        properties: {
          code: { type: 'string', example: 'invalid' },
          message: { type: 'string' },
          details: { type: 'object', additionalProperties: true },
        },
      },
    },
  },
  OAuthError: {
    type: 'object',
    required: ['error'],
    description: 'RFC 6749 section 5.2',
    properties: {
      error: { type: 'string', enum: ['invalid_request', 'invalid_client', 'unsupported_grant_type', 'invalid_scope'] },
      error_description: { type: 'string' },
    },
  },
};

/** The description of each status every operation may answer with. */
export const ERROR_RESPONSES: Record<string, string> = {
  '400': 'invalid or parse_error: a field is missing, of the wrong type or out of range, or the body is not JSON',
  '413': 'payload_too_large: the body is over the limit; nothing is stored',
  '415': 'unsupported_media_type: a body of a type this endpoint does not read',
  '500': 'server_error: the body carries an error id that is also in the log',
  '503': 'unavailable: a dependency (database, cache, object storage) is down; nothing is half-stored',
};
