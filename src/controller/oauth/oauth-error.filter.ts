import { ArgumentsHost, Catch, ExceptionFilter } from '@nestjs/common';
import type { Response } from 'express';
import { OAuthError } from './oauth-error';

/** Renders token endpoint refusals as RFC 6749 5.2 bodies, never cached. */
@Catch(OAuthError)
export class OAuthErrorFilter implements ExceptionFilter {
  catch(error: OAuthError, host: ArgumentsHost): void {
    const response = host.switchToHttp().getResponse<Response>();
    response.setHeader('Cache-Control', 'no-store');
    response.setHeader('Pragma', 'no-cache');
    // RFC 7235: a 401 carries a challenge; it names Basic, the scheme the client may use.
    if (error.status === 401) response.setHeader('WWW-Authenticate', 'Basic realm="oauth"');
    response.status(error.status).json({ error: error.error, error_description: error.description });
  }
}
