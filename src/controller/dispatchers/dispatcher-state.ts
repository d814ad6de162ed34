export type DispatcherState = 'online' | 'stale' | 'offline';

/** online: heard within 2 heartbeat intervals; stale: within 5; offline: longer, or never. */
export function dispatcherState(lastHeartbeatAt: Date | null, intervalSeconds: number, now: Date = new Date()): DispatcherState {
  if (!lastHeartbeatAt) return 'offline';
  const silentMs = now.getTime() - lastHeartbeatAt.getTime();
  const intervalMs = intervalSeconds * 1000;
  if (silentMs <= 2 * intervalMs) return 'online';
  if (silentMs <= 5 * intervalMs) return 'stale';
  return 'offline';
}

/** A slug from a name: lower-case, `a-z0-9-`, no leading, trailing or repeated dashes. */
export function slugify(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 100);
}
