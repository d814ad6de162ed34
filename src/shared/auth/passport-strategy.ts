import type { IncomingMessage, ServerResponse } from 'node:http';
import passport from 'passport';

/**
 * Where the strategies register themselves (each overrides `getPassportInstance` of
 * @nestjs/passport's `PassportStrategy` to return it): a registry of their own, never read.
 * One process may hold several apps (the `all` role, test systems, replicas), each with its
 * own settings and database, while Passport's default registry holds one strategy per name
 * for the whole process: the last app built would check every app's credentials. Each app's
 * guards run the strategy instance that app's module built (`runStrategy`) instead.
 */
export const strategyRegistry = new passport.Passport();

/** What a strategy made of a request: the authenticated caller, or `false` when it failed. */
export interface StrategyOutcome<T> {
  user: T | false;
}

/**
 * Runs one strategy instance on a request through `passport.authenticate`. Passport writes the
 * request's own callbacks (`success`, `fail`, `error`) onto the strategy object, so each request
 * gets a fresh object inheriting from the instance, as Passport does for a named strategy.
 * An `error` (a refusal the strategy decided itself) rejects with that error. The response is
 * only passed on: with a callback, Passport answers nothing itself, and these strategies never
 * redirect.
 */
export function runStrategy<T>(strategy: passport.Strategy, request: IncomingMessage, response?: ServerResponse): Promise<StrategyOutcome<T>> {
  return new Promise((resolve, reject) => {
    const perRequest = Object.create(strategy) as passport.Strategy;
    const middleware = passport.authenticate(perRequest, { session: false }, (error: unknown, user: T | false) => {
      if (error) reject(error);
      else resolve({ user: user ?? false });
    }) as (request: IncomingMessage, response: ServerResponse | undefined, next: (error?: unknown) => void) => void;
    middleware(request, response, (error?: unknown) => (error ? reject(error) : resolve({ user: false })));
  });
}
