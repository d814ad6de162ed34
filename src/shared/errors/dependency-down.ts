/** Socket and resolver codes that mean a service this server calls did not answer. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE']);

/** What the clients of PostgreSQL (pg, TypeORM's pool) and Redis (ioredis) say when theirs is gone. */
const DOWN_MESSAGES = [
  /^Connection terminated/i,
  /timeout exceeded when trying to connect/i,
  /Stream isn't writeable and enableOfflineQueue options is false/i,
  /^Connection is closed\.?$/i,
  /Reached the max retries per request limit/i,
  /the database system is (starting up|shutting down)/i,
];

/**
 * True when an error (or any error it wraps) says a dependency is unreachable rather than
 * that the request or the code is wrong: the contract answers those with 503 `unavailable`,
 * never 500, whichever client raised them.
 */
export function isDependencyDown(error: unknown, depth = 0): boolean {
  if (depth > 5 || error === null || typeof error !== 'object') return false;
  const { code, message, cause, errors, driverError } = error as {
    code?: unknown; message?: unknown; cause?: unknown; errors?: unknown; driverError?: unknown;
  };
  if (typeof code === 'string' && NETWORK_CODES.has(code)) return true;
  // PostgreSQL's own "cannot connect now" / "admin shutdown" classes (57P0x, 08xxx), and a server
  // whose max_connections are all taken (53300): no connection now, one later.
  if (typeof code === 'string' && /^(57P0[1-3]|08\d{3}|53300)$/.test(code)) return true;
  if (typeof message === 'string' && DOWN_MESSAGES.some((pattern) => pattern.test(message))) return true;
  const inner = [cause, driverError, ...(Array.isArray(errors) ? errors : [])];
  return inner.some((item) => isDependencyDown(item, depth + 1));
}
