import { z } from 'zod';

type Env = Record<string, string | undefined>;

/** JSON text parsed, or an issue zod reports like any other. */
export const jsonText = z.string().transform((text, ctx) => {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    ctx.addIssue({ code: 'custom', message: 'not JSON' });
    return z.NEVER;
  }
});

export const commaList = z.string().transform((text) => text.split(',').map((item) => item.trim()).filter(Boolean));

/**
 * Reads settings from the environment: each method builds the zod schema of one variable and runs it.
 * A wrong value is not thrown at once: it is noted in `problems` (naming the variable and what it
 * wants) and the fallback is used, so one `ConfigError` can list every wrong variable together.
 */
export class Reader {
  readonly problems: string[] = [];
  constructor(private readonly env: Env) {}

  raw(name: string): string | undefined {
    const value = this.env[name];
    return value === undefined || value.trim() === '' ? undefined : value.trim();
  }

  string(name: string, fallback: string): string {
    return this.raw(name) ?? fallback;
  }

  optional(name: string): string | null {
    return this.raw(name) ?? null;
  }

  int(name: string, fallback: number, min: number, max: number): number {
    const schema = z.string().regex(/^-?\d+$/).transform(Number).pipe(z.number().int().min(min).max(max));
    return this.parse(name, fallback, schema, `a whole number from ${min} to ${max}`);
  }

  bool(name: string, fallback: boolean): boolean {
    const schema = z.stringbool({ truthy: ['true', '1', 'yes'], falsy: ['false', '0', 'no'] });
    return this.parse(name, fallback, schema, 'true or false');
  }

  oneOf<T extends string>(name: string, fallback: T, allowed: readonly T[]): T {
    return this.parse(name, fallback, z.enum(allowed), `one of ${allowed.join(', ')}`);
  }

  url(name: string, fallback: string | null, protocols = ['http:', 'https:']): string | null {
    const protocol = new RegExp(`^(${protocols.map((p) => p.replace(/:$/, '')).join('|')})$`);
    const schema = z.url({ protocol }).transform((value) => value.replace(/\/+$/, ''));
    return this.parse(name, fallback, schema, `a URL with ${protocols.join(' or ')}`);
  }

  stringMap(name: string): Record<string, string> {
    return this.parse(name, {}, jsonText.pipe(z.record(z.string(), z.string())), 'a JSON object of strings');
  }

  list<T extends string>(name: string, fallback: T[], allowed: readonly T[]): T[] {
    const schema = commaList.pipe(z.array(z.enum(allowed)).nonempty()).transform((items) => [...new Set(items)]);
    return this.parse(name, fallback, schema, `a comma-separated list of ${allowed.join(', ')}`);
  }

  /** A comma-separated list of free-form words (names, patterns); unset: none. */
  words(name: string): string[] {
    return this.parse(name, [], commaList.transform((items) => [...new Set(items)]), 'a comma-separated list');
  }

  /** The variable through `schema`; unset gives the fallback, a wrong value a problem and the fallback. */
  parse<T>(name: string, fallback: T, schema: z.ZodType<T>, wants: string): T {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    const result = schema.safeParse(value);
    if (result.success) return result.data;
    this.problems.push(`${name} must be ${wants} (got "${value}")`);
    return fallback;
  }
}
