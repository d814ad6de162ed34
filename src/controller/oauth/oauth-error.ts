/** The error codes of RFC 6749 section 5.2 this server answers with. */
export type OAuthErrorCode = 'invalid_request' | 'invalid_client' | 'unsupported_grant_type' | 'invalid_scope';

/**
 * A token endpoint refusal, rendered as RFC 6749 5.2 says (`{error, error_description}`),
 * not in the controller's error envelope: OAuth client libraries read that shape.
 */
export class OAuthError extends Error {
  constructor(
    readonly error: OAuthErrorCode,
    readonly description: string,
  ) {
    super(description);
  }

  /** 401 for a failed client authentication, 400 for the rest (RFC 6749 5.2). */
  get status(): number {
    return this.error === 'invalid_client' ? 401 : 400;
  }
}
