import { embeddedDispatcherCredential, usesEmbeddedDispatcherClient } from '../../shared/auth/embedded-dispatcher-client';
import { AppConfig } from '../../shared/config/config';
import { withDeadline } from '../../shared/http/deadline';

export type ControllerCredential =
  | { kind: 'token'; token: string }
  | { kind: 'oauth'; clientId: string; clientSecret: string };

export interface ControllerTarget {
  url: string;
  credential: ControllerCredential;
}

/** An answer from the controller that is not 2xx. */
export class ControllerError extends Error {
  constructor(readonly status: number, path: string) {
    super(`controller answered ${status} to ${path}`);
  }
}

const REQUEST_TIMEOUT_MS = 10_000;

/**
 * Where and how to register: with CONTROLLER_URL and OAuth client credentials or
 * CONTROLLER_TOKEN; in the `all` role, when neither is set, with the controller next door and
 * the OAuth client it keeps for this dispatcher (dispatchers:write only, never the operator token).
 */
export function controllerTargetOf(config: AppConfig): ControllerTarget | null {
  if (!config.controllerUrl) return null;
  if (usesEmbeddedDispatcherClient(config)) {
    const { clientId, clientSecret } = embeddedDispatcherCredential(config.secretKey);
    return { url: config.controllerUrl, credential: { kind: 'oauth', clientId, clientSecret } };
  }
  if (config.controllerToken) return { url: config.controllerUrl, credential: { kind: 'token', token: config.controllerToken } };
  if (config.controllerClientId && config.controllerClientSecret) {
    return { url: config.controllerUrl, credential: { kind: 'oauth', clientId: config.controllerClientId, clientSecret: config.controllerClientSecret } };
  }
  return null;
}

/** Calls the controller's dispatcher endpoints, fetching (and renewing) an OAuth token when that is the credential. */
export class ControllerClient {
  private accessToken?: { value: string; expiresAt: number };

  constructor(private readonly target: ControllerTarget) {}

  async post<T>(path: string, body: unknown): Promise<T> {
    const authorization = await this.authorization();
    const { status, ok, text } = await withDeadline(REQUEST_TIMEOUT_MS, async (signal) => {
      const response = await fetch(`${this.target.url}${path}`, { method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: authorization }, body: JSON.stringify(body), signal });
      return { status: response.status, ok: response.ok, text: await response.text() };
    });
    if (status === 401) this.accessToken = undefined;
    if (!ok) throw new ControllerError(status, path);
    return (text ? JSON.parse(text) : {}) as T;
  }

  private async authorization(): Promise<string> {
    const credential = this.target.credential;
    if (credential.kind === 'token') return `Token ${credential.token}`;
    if (!this.accessToken || this.accessToken.expiresAt <= Date.now()) {
      const token = await withDeadline(REQUEST_TIMEOUT_MS, async (signal) => {
        const response = await fetch(`${this.target.url}/api/v1/oauth/token/`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ grant_type: 'client_credentials', client_id: credential.clientId, client_secret: credential.clientSecret, scope: 'dispatchers:write' }).toString(),
          signal,
        });
        if (!response.ok) throw new ControllerError(response.status, '/api/v1/oauth/token/');
        return (await response.json()) as { access_token: string; expires_in?: number };
      });
      // Renewed a little before it expires, so a heartbeat never carries a dead token.
      this.accessToken = { value: token.access_token, expiresAt: Date.now() + Math.max(0, (token.expires_in ?? 300) - 30) * 1000 };
    }
    return `Bearer ${this.accessToken.value}`;
  }
}
