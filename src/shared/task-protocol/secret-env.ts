import { IsMapOf } from '../validation/maps';
import { ValidationOptions } from 'class-validator';

/** A task's `secret_env`: variable names to `<secret>/<key>` references, never values (CONTRACT section 5). */
export type SecretEnv = Record<string, string>;

export interface SecretRef {
  secret: string;
  key: string;
}

/** `<secret>/<key>`: a Kubernetes Secret name (DNS-1123 subdomain) and one of its data keys. */
const SECRET_REF = /^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?)\/([-._a-zA-Z0-9]{1,253})$/;

export function parseSecretRef(reference: string): SecretRef | null {
  const match = SECRET_REF.exec(reference);
  return match ? { secret: match[1], key: match[3] } : null;
}

export const SECRET_ENV_DESCRIPTION = 'Variables the agent gets from secrets, as "<secret>/<key>" references within the dispatcher\'s AGENT_SECRET_ALLOWLIST; '
  + 'values are never stored or answered';

/** The field a controller and a dispatcher take: at most 64 variables, each a well-formed reference. */
export function IsSecretEnv(options?: ValidationOptions): PropertyDecorator {
  return IsMapOf(
    'isSecretEnv',
    /^[A-Za-z_][A-Za-z0-9_]{0,254}$/,
    (value) => typeof value === 'string' && parseSecretRef(value) !== null,
    '$property must map variable names to "<secret>/<key>" references (a Kubernetes Secret name and one of its keys)',
    options,
  );
}

/** The references a request set, or none (an empty map is left out, so older requests read and digest as before). */
export function secretEnvOf(source: { secret_env?: SecretEnv | null }): SecretEnv | undefined {
  return source.secret_env && Object.keys(source.secret_env).length > 0 ? { ...source.secret_env } : undefined;
}

/** An allow-list entry: a secret name, or a pattern where `*` stands for any run of characters. */
export function secretAllowed(secret: string, allowlist: readonly string[]): boolean {
  return allowlist.some((entry) => {
    if (!entry.includes('*')) return entry === secret;
    const pattern = entry.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*');
    return new RegExp(`^${pattern}$`).test(secret);
  });
}
