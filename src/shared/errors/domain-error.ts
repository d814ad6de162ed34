/** The stable error codes of CONTRACT section 1, with their HTTP statuses. */
export const ERROR_STATUS = {
  invalid: 400,
  parse_error: 400,
  not_authenticated: 401,
  authentication_failed: 401,
  permission_denied: 403,
  invalid_signature: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  throttled: 429,
  server_error: 500,
  bad_gateway: 502,
  unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;
export type FieldErrors = Record<string, string[]>;

/**
 * An error a service throws on purpose. The role's exception filter turns it into the
 * contract's body; `headers` carries what the status needs (`Retry-After`, `WWW-Authenticate`).
 */
export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly options: { fields?: FieldErrors; details?: Record<string, unknown>; headers?: Record<string, string> } = {},
  ) {
    super(message);
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }

  static invalid(fields: FieldErrors, message?: string): DomainError {
    return new DomainError('invalid', message ?? summary(fields), { fields });
  }

  static notFound(what: string): DomainError {
    return new DomainError('not_found', `${what} not found.`);
  }

  static conflict(message: string, details?: Record<string, unknown>): DomainError {
    return new DomainError('conflict', message, { details });
  }
}

/** The first problem as a sentence, named by its field unless the message names it already. */
function summary(fields: FieldErrors): string {
  const [field, messages] = Object.entries(fields)[0] ?? [];
  if (!field || !messages?.length) return 'Invalid request.';
  const leaf = field.split('.').pop()!;
  const text = messages[0].startsWith(`${leaf} `) ? `${field}${messages[0].slice(leaf.length)}` : `${field}: ${messages[0]}`;
  return /[.!?]$/.test(text) ? text : `${text}.`;
}
