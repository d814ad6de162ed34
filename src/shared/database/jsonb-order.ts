/**
 * A JSON value with its object keys in the order PostgreSQL's jsonb keeps them (shorter keys
 * first, then by their UTF-8 bytes), at every depth: what the value looks like once it has
 * been stored in a jsonb column and read back. Lets a row's JSON be serialised before the
 * statement that stores it, exactly as it would be after.
 */
export function inJsonbOrder<T>(value: T): T {
  if (Array.isArray(value)) return value.map(inJsonbOrder) as T;
  if (value === null || typeof value !== 'object') return value;
  const entries = Object.entries(value as Record<string, unknown>).map(([key, item]) => [key, Buffer.from(key, 'utf8'), item] as const);
  entries.sort(([, a], [, b]) => a.length - b.length || Buffer.compare(a, b));
  return Object.fromEntries(entries.map(([key, , item]) => [key, inJsonbOrder(item)])) as T;
}
