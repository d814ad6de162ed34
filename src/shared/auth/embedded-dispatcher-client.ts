import { createHmac } from 'node:crypto';

/** The OAuth client the `all` role's dispatcher checks in with: it may write dispatchers and nothing else. */
export const EMBEDDED_DISPATCHER_CLIENT_NAME = 'embedded dispatcher';

export interface ClientCredential {
  clientId: string;
  clientSecret: string;
}

/**
 * The embedded dispatcher's client id and secret, derived from SECRET_KEY: both roles of the
 * `all` process (and its twins) compute the same ones, so the controller can create or reuse
 * the client and the dispatcher can use it without either storing the secret anywhere.
 */
export function embeddedDispatcherCredential(secretKey: string): ClientCredential {
  const id = createHmac('sha256', secretKey).update('embedded dispatcher client id').digest();
  // Shaped as a version 4 UUID, the form every client id has.
  id[6] = (id[6] & 0x0f) | 0x40;
  id[8] = (id[8] & 0x3f) | 0x80;
  const hex = id.subarray(0, 16).toString('hex');
  const clientId = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  const clientSecret = `atc_cs_${createHmac('sha256', secretKey).update('embedded dispatcher client secret').digest('base64url')}`;
  return { clientId, clientSecret };
}

/** True when the `all` role's dispatcher is to use the derived client (no credential of its own was set). */
export function usesEmbeddedDispatcherClient(config: { role: string; controllerToken: string | null; controllerClientId: string | null; controllerClientSecret: string | null }): boolean {
  return config.role === 'all' && !config.controllerToken && !(config.controllerClientId && config.controllerClientSecret);
}
