import { Logger } from '@nestjs/common';
import { KubernetesObject, Watch } from '@kubernetes/client-node';
import { describeApiError, KubeApi } from './kubernetes-client';

export type WatchedChange<T> = { type: 'ADDED' | 'MODIFIED' | 'DELETED'; object: T };

interface ListResult<T> {
  items: T[];
  metadata?: { resourceVersion?: string };
}

export interface ResourceWatchOptions<T> {
  /** For logs: `jobs in default`. */
  description: string;
  /** The REST collection to watch: `/apis/batch/v1/namespaces/default/jobs`. */
  path: string;
  labelSelector: string;
  list: () => Promise<ListResult<T>>;
  onChange: (change: WatchedChange<T>) => void;
  /** What to keep of each object (and pass to onChange); default: all of it. */
  keep?: (object: T) => T;
  /** Delay before re-connecting after an error, doubled per failure up to 30 s. */
  retryDelayMs?: number;
  /**
   * The server ends each watch after about this long (timeoutSeconds, jittered) and it
   * is resumed from the last resourceVersion, as client-go does.
   */
  timeoutSeconds?: number;
  /**
   * A watch that has heard nothing, not even a bookmark, for this long is restarted (a
   * connection dropped by a middlebox without a close looks alive). Default 90 s: the API
   * server sends a bookmark about once a minute.
   */
  silenceSeconds?: number;
}

const DEFAULT_WATCH_TIMEOUT_SECONDS = 300;
const DEFAULT_SILENCE_SECONDS = 90;

/**
 * Keeps an up-to-date picture of one collection: list, then watch from the list's
 * resourceVersion; a watch that ends cleanly is resumed from the last resourceVersion
 * seen, a dropped one or an expired one (410 Gone) is re-listed, and objects that
 * vanished meanwhile are reported as DELETED.
 */
export class ResourceWatch<T extends KubernetesObject> {
  private readonly logger = new Logger('KubernetesWatch');
  private readonly known = new Map<string, T>();
  private resourceVersion: string | undefined;
  private relist = true;
  private failures = 0;
  private stopped = false;
  private abort: AbortController | undefined;
  private timer: NodeJS.Timeout | undefined;
  private silenceTimer: NodeJS.Timeout | undefined;
  private lastHeard = Date.now();
  private syncedOnce!: Promise<void>;
  private resolveSynced!: () => void;

  constructor(private readonly api: KubeApi, private readonly options: ResourceWatchOptions<T>) {
    this.syncedOnce = new Promise((resolve) => {
      this.resolveSynced = resolve;
    });
  }

  start(): void {
    const silenceMs = (this.options.silenceSeconds ?? DEFAULT_SILENCE_SECONDS) * 1000;
    this.silenceTimer = setInterval(() => this.restartIfSilent(silenceMs), Math.min(10_000, Math.max(100, silenceMs / 4)));
    this.silenceTimer.unref();
    void this.cycle();
  }

  /** Resolves once the first list has been applied. */
  synced(): Promise<void> {
    return this.syncedOnce;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.silenceTimer);
    this.abort?.abort();
  }

  private async cycle(): Promise<void> {
    if (this.stopped) return;
    try {
      if (this.relist || !this.resourceVersion) await this.listAndReplace();
      if (this.stopped) return;
      const timeoutSeconds = Math.max(1, Math.round((this.options.timeoutSeconds ?? DEFAULT_WATCH_TIMEOUT_SECONDS) * (1 + Math.random() / 5)));
      const watch = new Watch(this.api.kubeConfig);
      // client-node aborts a stream silent for this long; the server's bookmarks come
      // about once a minute, so the limit must outlast the server-side timeout instead.
      // (The limit is a private field of client-node's Watch: set it where it exists.)
      (watch as unknown as { requestTimeoutMs: number }).requestTimeoutMs = (timeoutSeconds + 60) * 1000;
      this.lastHeard = Date.now();
      this.abort = await watch.watch(
        this.options.path,
        { labelSelector: this.options.labelSelector, resourceVersion: this.resourceVersion, allowWatchBookmarks: true, timeoutSeconds },
        (type, object: T & { code?: number; message?: string }) => this.onEvent(type, object),
        (error: unknown) => this.onDone(error),
      );
    } catch (error) {
      this.onDone(error);
    }
  }

  private async listAndReplace(): Promise<void> {
    const result = await this.options.list();
    const seen = new Set<string>();
    for (const listed of result.items) {
      const item = this.options.keep ? this.options.keep(listed) : listed;
      const key = keyOf(item);
      seen.add(key);
      const before = this.known.get(key);
      this.known.set(key, item);
      if (before?.metadata?.resourceVersion !== item.metadata?.resourceVersion) {
        this.options.onChange({ type: before ? 'MODIFIED' : 'ADDED', object: item });
      }
    }
    for (const [key, object] of this.known) {
      if (seen.has(key)) continue;
      this.known.delete(key);
      this.options.onChange({ type: 'DELETED', object });
    }
    this.resourceVersion = result.metadata?.resourceVersion;
    this.relist = false;
    this.failures = 0;
    this.resolveSynced();
  }

  /** The stream is open but nothing comes: end it and list again, since events may have been lost. */
  private restartIfSilent(silenceMs: number): void {
    if (this.stopped || !this.abort || Date.now() - this.lastHeard < silenceMs) return;
    this.logger.warn(`Watch of ${this.options.description} heard nothing for ${Math.round(silenceMs / 1000)} s; restarting it`);
    this.relist = true;
    this.lastHeard = Date.now();
    const abort = this.abort;
    this.abort = undefined;
    abort.abort();
  }

  private onEvent(type: string, received: T & { code?: number; message?: string }): void {
    this.lastHeard = Date.now();
    if (type === 'ERROR') {
      // 410 Gone: our resourceVersion was compacted away; anything else: start over too.
      this.logger.warn(`Watch of ${this.options.description} answered ${received.code ?? ''} ${received.message ?? ''}; re-listing`);
      this.relist = true;
      return;
    }
    const object = this.options.keep && type !== 'BOOKMARK' ? this.options.keep(received) : received;
    const version = object.metadata?.resourceVersion;
    if (version) this.resourceVersion = version;
    if (type === 'BOOKMARK') return;
    if (type !== 'ADDED' && type !== 'MODIFIED' && type !== 'DELETED') return;
    this.failures = 0;
    const key = keyOf(object);
    if (type === 'DELETED') this.known.delete(key);
    else this.known.set(key, object);
    this.options.onChange({ type, object });
  }

  private onDone(error: unknown): void {
    if (this.stopped) return;
    if (error) {
      // A dropped stream may have lost events: list again rather than trust the resourceVersion.
      this.relist = true;
      this.failures += 1;
      this.logger.warn(`Watch of ${this.options.description} ended: ${describeApiError(error)}`);
    }
    const base = this.options.retryDelayMs ?? 500;
    const delay = error || this.relist ? Math.min(30000, base * 2 ** Math.max(0, this.failures - 1)) : 0;
    this.timer = setTimeout(() => void this.cycle(), delay);
    this.timer.unref();
  }
}

function keyOf(object: KubernetesObject): string {
  return `${object.metadata?.namespace ?? ''}/${object.metadata?.name ?? ''}`;
}
