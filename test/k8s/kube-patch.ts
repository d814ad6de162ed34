import { KubeObject } from './kube-store';

type Json = Record<string, unknown>;
interface JsonPatchOperation { op: string; path: string; value?: unknown }

/**
 * The two patch types a client sends without server-side apply: JSON Patch (RFC 6902:
 * add, replace, remove, test) and JSON Merge Patch (RFC 7386). Returns the patched copy,
 * or a problem sentence as the API server words it.
 */
export function applyPatch(object: KubeObject, contentType: string, body: string): KubeObject | string {
  let patch: unknown;
  try {
    patch = JSON.parse(body);
  } catch {
    return 'the request body is not JSON';
  }
  const copy = structuredClone(object);
  if (contentType.startsWith('application/json-patch+json')) {
    if (!Array.isArray(patch)) return 'a JSON patch must be an array of operations';
    for (const operation of patch as JsonPatchOperation[]) {
      const problem = applyOperation(copy as unknown as Json, operation);
      if (problem) return problem;
    }
    return copy;
  }
  if (contentType.startsWith('application/merge-patch+json')) return mergePatch(copy as unknown as Json, patch) as unknown as KubeObject;
  return `patch type "${contentType}" is not supported by this server`;
}

function applyOperation(target: Json, { op, path, value }: JsonPatchOperation): string | undefined {
  const keys = path.split('/').slice(1).map((key) => key.replace(/~1/g, '/').replace(/~0/g, '~'));
  const last = keys.pop();
  let parent: unknown = target;
  for (const key of keys) parent = (parent as Json | undefined)?.[key];
  if (last === undefined || typeof parent !== 'object' || parent === null) return `the path "${path}" does not exist`;
  const holder = parent as Json;
  if (op === 'test') return JSON.stringify(holder[last]) === JSON.stringify(value) ? undefined : `the test at "${path}" failed`;
  if (op === 'remove' || op === 'replace') {
    if (!(last in holder)) return `the path "${path}" does not exist`;
  }
  if (op === 'remove') delete holder[last];
  else if (op === 'add' || op === 'replace') {
    if (Array.isArray(holder) && last === '-') (holder as unknown[]).push(value);
    else holder[last] = value;
  } else return `the operation "${op}" is not supported`;
  return undefined;
}

function mergePatch(target: unknown, patch: unknown): unknown {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return patch;
  const result: Json = typeof target === 'object' && target !== null && !Array.isArray(target) ? { ...(target as Json) } : {};
  for (const [key, value] of Object.entries(patch as Json)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}
