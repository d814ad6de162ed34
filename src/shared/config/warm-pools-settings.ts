import { existsSync, readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { isQuantity } from '../validation/quantities';

/** One warm pool (WARM_POOLS): agents of one image kept running, each waiting for one task. */
export interface WarmPool {
  name: string;
  image: string;
  backend: 'local' | 'kubernetes';
  /** Kubernetes only; empty: the dispatcher's KUBE_NAMESPACE. */
  namespace: string;
  size: number;
  resources: { cpu: string; memory: string };
  /** Null: the dispatcher's default runtime class. */
  runtimeClass: string | null;
}

const quantity = (what: string) => z.string().refine(isQuantity, { message: `must be a Kubernetes ${what} quantity such as ${what === 'cpu' ? '500m' : '512Mi'}` });

const poolSchema = z.object({
  name: z.string().regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/, 'must be lower-case letters, digits and hyphens (at most 63)'),
  image: z.string().trim().min(1, 'must name an image'),
  backend: z.enum(['local', 'kubernetes']),
  namespace: z.string().optional(),
  size: z.number().int().min(0).max(1000),
  resources: z.object({ cpu: quantity('cpu'), memory: quantity('memory') }),
  runtime_class: z.string().min(1).optional(),
});

/** JSON text, or the path of a JSON or YAML file (`.json`, `.yaml`, `.yml`) holding it. */
function textOf(value: string): string {
  if (value.startsWith('[')) return value;
  if (!existsSync(value)) throw new Error(`is neither a JSON array nor the path of a file (${value} does not exist)`);
  return readFileSync(value, 'utf8');
}

/**
 * Reads WARM_POOLS; every wrong entry is a problem naming the entry (by its name or its
 * place) and the field, so the boot stops with all of them listed.
 */
export function readWarmPools(r: { problems: string[]; raw(name: string): string | undefined }, backends: readonly string[]): WarmPool[] {
  const value = r.raw('WARM_POOLS');
  if (value === undefined) return [];
  let entries: unknown;
  try {
    entries = parseYaml(textOf(value));
  } catch (error) {
    r.problems.push(`WARM_POOLS ${error instanceof Error ? error.message : String(error)}`);
    return [];
  }
  if (!Array.isArray(entries)) {
    r.problems.push('WARM_POOLS must be a JSON array (or a JSON or YAML file holding one) of {name, image, backend, size, resources}');
    return [];
  }
  const pools: WarmPool[] = [];
  entries.forEach((entry: unknown, index) => {
    const label = typeof (entry as { name?: unknown })?.name === 'string' ? `"${(entry as { name: string }).name}"` : `#${index + 1}`;
    const parsed = poolSchema.safeParse(entry);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) r.problems.push(`WARM_POOLS entry ${label}: ${issue.path.join('.') || 'entry'} ${issue.message}`);
      return;
    }
    const pool = parsed.data;
    if (!backends.includes(pool.backend)) r.problems.push(`WARM_POOLS entry ${label}: backend ${pool.backend} is not enabled (DISPATCHER_BACKENDS)`);
    if (pools.some((other) => other.name === pool.name)) r.problems.push(`WARM_POOLS entry ${label}: the name is used twice`);
    pools.push({
      name: pool.name, image: pool.image, backend: pool.backend, namespace: pool.namespace ?? '', size: pool.size,
      resources: pool.resources, runtimeClass: pool.runtime_class ?? null,
    });
  });
  return pools;
}
