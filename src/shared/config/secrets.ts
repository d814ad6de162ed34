import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CONTROLLER_SECRETS, DISPATCHER_SECRETS, Role, roleFrom } from './config';

type Env = Record<string, string | undefined>;

export interface EmbeddedSecrets {
  env: Env;
  file: string;
  generated: string[];
}

function secretsFor(role: Role): string[] {
  const names = new Set<string>([
    ...(role !== 'dispatcher' ? CONTROLLER_SECRETS : []),
    ...(role !== 'controller' ? DISPATCHER_SECRETS : []),
  ]);
  // Two roles in two processes cannot agree on a generated signing key, so it is only
  // made up when both live in one process.
  if (role !== 'all') names.delete('CALLBACK_SIGNING_KEY');
  return [...names];
}

/**
 * Embedded mode (no NODE_ENV=production): any secret that is not set is generated once
 * and kept in `<DATA_DIR>/secrets.json` (mode 0600), so restarts keep the same values.
 * Production returns the environment untouched and lets config validation refuse it.
 */
export function withEmbeddedSecrets(env: Env, argv: string[] = []): EmbeddedSecrets {
  const dataDir = path.resolve(env.DATA_DIR?.trim() || './.data');
  const file = path.join(dataDir, 'secrets.json');
  if (env.NODE_ENV === 'production') return { env, file, generated: [] };
  const role = roleFrom(argv, env) as Role;
  const missing = secretsFor(role).filter((name) => !env[name]?.trim());
  if (missing.length === 0) return { env, file, generated: [] };

  let stored: Record<string, string> = {};
  if (fs.existsSync(file)) stored = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, string>;
  const generated: string[] = [];
  for (const name of missing) {
    if (!stored[name]) {
      stored[name] = randomBytes(32).toString('base64url');
      generated.push(name);
    }
  }
  if (generated.length > 0) {
    fs.mkdirSync(dataDir, { recursive: true });
    fs.writeFileSync(file, `${JSON.stringify(stored, null, 2)}\n`, { mode: 0o600 });
  }
  const filled: Env = { ...env };
  for (const name of missing) filled[name] = stored[name];
  return { env: filled, file, generated };
}
