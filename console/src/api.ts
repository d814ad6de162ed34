/** The signed-in credential, in this browser tab's session only (never localStorage, never shown again). */
export type Credential = { kind: 'token'; token: string } | { kind: 'oauth'; accessToken: string; expiresAt: number; clientId: string };

const KEY = 'atc.credential';

export function loadCredential(): Credential | null {
  try {
    const stored = JSON.parse(sessionStorage.getItem(KEY) ?? 'null') as Credential | null;
    if (stored?.kind === 'oauth' && stored.expiresAt < Date.now()) return null;
    return stored;
  } catch {
    return null;
  }
}

export function saveCredential(credential: Credential | null): void {
  if (credential) sessionStorage.setItem(KEY, JSON.stringify(credential));
  else sessionStorage.removeItem(KEY);
}

export function authorization(credential: Credential): string {
  return credential.kind === 'token' ? `Token ${credential.token}` : `Bearer ${credential.accessToken}`;
}

export class ApiError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

/** A JSON call to the controller's API; an error answer becomes an ApiError with the contract's `detail`. */
export async function api<T = any>(credential: Credential, path: string, init: RequestInit = {}): Promise<T> {
  const headers = new Headers(init.headers);
  headers.set('authorization', authorization(credential));
  if (init.body && typeof init.body === 'string') headers.set('content-type', 'application/json');
  const response = await fetch(`/api/v1/${path}`, { ...init, headers });
  const text = await response.text();
  const body = text ? safeJson(text) : null;
  if (!response.ok) throw new ApiError(response.status, (body as { detail?: string } | null)?.detail ?? `${response.status} ${response.statusText}`);
  return body as T;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Exchanges OAuth client credentials for an access token; only the token is kept. */
export async function signInWithClient(clientId: string, clientSecret: string): Promise<Credential> {
  const response = await fetch('/api/v1/oauth/token/', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret }),
  });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new ApiError(response.status, body.error_description ?? body.error ?? 'Sign-in failed');
  return { kind: 'oauth', accessToken: body.access_token, expiresAt: Date.now() + (body.expires_in ?? 3600) * 1000, clientId };
}

/** Checks a credential before keeping it. */
export async function whoami(credential: Credential): Promise<{ kind: string; name: string }> {
  return api(credential, 'auth/whoami/');
}

/**
 * Reads a streamed answer (logs, or `text/event-stream` frames) chunk by chunk until it
 * ends or `signal` aborts; fetch rather than EventSource, which cannot send Authorization.
 */
export async function readStream(credential: Credential, path: string, signal: AbortSignal, onText: (text: string) => void, headers: Record<string, string> = {}): Promise<void> {
  const response = await fetch(`/api/v1/${path}`, { headers: { authorization: authorization(credential), ...headers }, signal });
  if (!response.ok || !response.body) throw new ApiError(response.status, `${response.status} ${response.statusText}`);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    onText(value);
  }
}

/** Deployment settings the console shows (`/console/settings.json`, no credential needed). */
export interface ConsoleSettings {
  trace_url_template: string | null;
}

let settings: Promise<ConsoleSettings> | undefined;

export function consoleSettings(): Promise<ConsoleSettings> {
  settings ??= fetch('/console/settings.json')
    .then((response) => (response.ok ? (response.json() as Promise<ConsoleSettings>) : { trace_url_template: null }))
    .catch(() => ({ trace_url_template: null }));
  return settings;
}

/** The trace's page in the operator's tracing tool, from TRACE_URL_TEMPLATE; null without one. */
export function traceUrl(template: string | null, traceId: string): string | null {
  return template ? template.split('{trace_id}').join(encodeURIComponent(traceId)) : null;
}
