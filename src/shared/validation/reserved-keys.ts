/**
 * class-transformer, which turns request bodies into DTOs, drops `__proto__` and
 * `constructor` keys and fails on an object holding a `constructor` key. Free-form JSON
 * (a brief, progress data, result metadata) may hold any key, so around the
 * transformation such keys travel under a name no client can send (a NUL first: the body
 * guard refuses NUL in keys) and are put back, as own data properties, afterwards. No
 * prototype is read or written on the way.
 */
const RESERVED = new Set(['__proto__', 'constructor', 'prototype']);
const MARK = '\u0000';

function isPlainContainer(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Buffer.isBuffer(value) && !(value instanceof Date);
}

function holdsReservedKey(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(holdsReservedKey);
  if (!isPlainContainer(value)) return false;
  return Object.keys(value).some((key) => RESERVED.has(key) || holdsReservedKey(value[key]));
}

/** Parsed JSON with reserved keys renamed out of class-transformer's way (a copy, when it holds any). */
export function hideReservedKeys(value: unknown): unknown {
  return holdsReservedKey(value) ? hidden(value) : value;
}

function hidden(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(hidden);
  if (!isPlainContainer(value)) return value;
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    define(copy, RESERVED.has(key) ? MARK + key : key, hidden(value[key]));
  }
  return copy;
}

/** Puts renamed keys back, in place, through a transformed object graph. */
export function restoreReservedKeys<T>(value: T, seen = new Set<object>()): T {
  if (!isPlainContainer(value) || seen.has(value)) return value;
  seen.add(value);
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    const item = restoreReservedKeys(record[key], seen);
    if (key.startsWith(MARK) && RESERVED.has(key.slice(1))) {
      delete record[key];
      define(record, key.slice(1), item);
    }
  }
  return value;
}

function define(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}
