import { readFile } from 'node:fs/promises';
import { parse } from 'yaml';
import type { SecretRef } from '../../shared/task-protocol/secret-env';

/**
 * The values the local engines give a task's `secret_env`, from AGENT_SECRETS_FILE
 * (`{"<secret>": {"<key>": "<value>"}}`, JSON or YAML). Read at each start, so a rotated file
 * counts from the next agent on; nothing of it is kept, logged or stored.
 */
export class LocalSecrets {
  constructor(private readonly file: string | null) {}

  /** Each variable's value; an error naming the reference (never a value) when one cannot be found. */
  async resolve(secretEnv: Record<string, SecretRef>): Promise<Record<string, string>> {
    const entries = Object.entries(secretEnv);
    if (entries.length === 0) return {};
    if (!this.file) throw new Error('secret_env needs AGENT_SECRETS_FILE on this dispatcher\'s local engine');
    const secrets = await this.read(this.file);
    const values: Record<string, string> = {};
    for (const [name, ref] of entries) {
      const value = secrets[ref.secret]?.[ref.key];
      if (typeof value !== 'string') throw new Error(`secret_env ${name}: "${ref.secret}/${ref.key}" is not in AGENT_SECRETS_FILE`);
      values[name] = value;
    }
    return values;
  }

  private async read(file: string): Promise<Record<string, Record<string, unknown> | undefined>> {
    let parsed: unknown;
    try {
      parsed = parse(await readFile(file, 'utf8'));
    } catch (error) {
      // The parser's message may quote the file's text: only its kind is passed on.
      const reason = (error as NodeJS.ErrnoException).code ?? 'not JSON or YAML';
      throw new Error(`AGENT_SECRETS_FILE cannot be read (${reason})`);
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('AGENT_SECRETS_FILE must hold an object of secrets');
    return parsed as Record<string, Record<string, unknown> | undefined>;
  }
}
