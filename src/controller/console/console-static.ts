import { existsSync } from 'node:fs';
import * as path from 'node:path';
import express, { NextFunction, Request, Response } from 'express';
import { findProjectRoot } from '../../shared/config/project-root';
import { DomainError } from '../../shared/errors/domain-error';

/** Where `npm run build` (`build:console`) writes the operator console. */
export const CONSOLE_DIR = path.join(findProjectRoot(), 'dist', 'console');

/**
 * Scripts, styles and API calls from this origin only: no inline script or style, no
 * framing, no other origin. The console is built to need nothing else.
 */
export const CONSOLE_CSP = [
  "default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:", "connect-src 'self'",
  "font-src 'self'", "object-src 'none'", "base-uri 'none'", "frame-ancestors 'none'", "form-action 'self'",
].join('; ');

function secure(response: Response): void {
  response.setHeader('Content-Security-Policy', CONSOLE_CSP);
  response.setHeader('X-Content-Type-Options', 'nosniff');
  response.setHeader('Referrer-Policy', 'no-referrer');
  response.setHeader('X-Frame-Options', 'DENY');
}

/**
 * `/console/`: the built files, with a strict Content-Security-Policy. Hashed assets are
 * cached for good; `index.html` is always checked again. Not built: a 404 that says so.
 */
/** What the console reads at `/console/settings.json`: deployment settings it shows, never a secret. */
export interface ConsoleSettings {
  trace_url_template: string | null;
}

export function serveConsole(app: { use: (path: string, ...handlers: express.RequestHandler[]) => unknown }, settings: ConsoleSettings, dir = CONSOLE_DIR): void {
  const files = express.static(dir, {
    index: 'index.html',
    redirect: true,
    setHeaders: (response, file) => {
      secure(response);
      response.setHeader('Cache-Control', file.includes(`${path.sep}assets${path.sep}`) ? 'public, max-age=31536000, immutable' : 'no-cache');
    },
  });
  app.use('/console', (request: Request, response: Response, next: NextFunction) => {
    if (request.method === 'GET' && request.path === '/settings.json') {
      secure(response);
      response.setHeader('Cache-Control', 'no-cache');
      response.json(settings);
      return;
    }
    if (!existsSync(path.join(dir, 'index.html'))) {
      return next(DomainError.notFound('The console (not built: run `npm run build`)'));
    }
    files(request, response, () => next(DomainError.notFound('Console file')));
  });
}
