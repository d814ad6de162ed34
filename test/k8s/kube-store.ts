import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';

/** The resources the test API server keeps, by their REST plural. */
export type Resource = 'jobs' | 'pods' | 'secrets' | 'events' | 'networkpolicies' | 'runtimeclasses';

export interface ObjectMeta {
  name: string;
  namespace: string;
  uid: string;
  resourceVersion: string;
  creationTimestamp: string;
  generateName?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }[];
  deletionTimestamp?: string;
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface StoredEvent {
  type: WatchEventType;
  resource: Resource;
  object: KubeObject;
  resourceVersion: number;
}

export interface ListQuery {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
}

/**
 * Objects with the API server's bookkeeping: one resourceVersion counter across every
 * resource (as etcd's revision), a history of changes for watches to resume from, and
 * compaction so a test can make an old resourceVersion "too old" (410 Gone).
 */
export class KubeStore {
  private revision = 1000;
  private readonly objects = new Map<Resource, Map<string, KubeObject>>();
  private history: StoredEvent[] = [];
  /** Watches from a resourceVersion below this are answered 410 Gone. */
  compactedRevision = 0;
  readonly changes = new EventEmitter();

  constructor() {
    this.changes.setMaxListeners(0);
  }

  get currentRevision(): number {
    return this.revision;
  }

  get(resource: Resource, namespace: string, name: string): KubeObject | undefined {
    return this.table(resource).get(`${namespace}/${name}`);
  }

  list(resource: Resource, query: ListQuery = {}): KubeObject[] {
    return [...this.table(resource).values()]
      .filter((object) => matches(object, query))
      .sort((a, b) => Number(a.metadata.resourceVersion) - Number(b.metadata.resourceVersion));
  }

  /** Stores a new object; the caller has checked that the name is free. */
  create(resource: Resource, object: Omit<KubeObject, 'metadata'> & { metadata: Partial<ObjectMeta> }): KubeObject {
    const metadata = object.metadata;
    const name = metadata.name ?? `${metadata.generateName ?? ''}${randomSuffix()}`;
    const stored = structuredClone({
      ...object,
      metadata: { ...metadata, name, uid: randomUUID(), creationTimestamp: new Date().toISOString() },
    }) as KubeObject;
    return this.commit('ADDED', resource, stored);
  }

  /** Applies `change` to a copy of the stored object and records it as MODIFIED. */
  update(resource: Resource, namespace: string, name: string, change: (object: KubeObject) => void): KubeObject | undefined {
    const current = this.get(resource, namespace, name);
    if (!current) return undefined;
    const next = structuredClone(current);
    change(next);
    return this.commit('MODIFIED', resource, next);
  }

  remove(resource: Resource, namespace: string, name: string): KubeObject | undefined {
    const current = this.get(resource, namespace, name);
    if (!current) return undefined;
    this.table(resource).delete(`${namespace}/${name}`);
    return this.commit('DELETED', resource, structuredClone(current));
  }

  /** Changes after `revision` of one resource, for a watch that resumes. */
  since(resource: Resource, revision: number, query: ListQuery): StoredEvent[] {
    return this.history.filter((e) => e.resource === resource && e.resourceVersion > revision && matches(e.object, query));
  }

  /** Forgets the history, as etcd compaction does: older resourceVersions become 410 Gone. */
  compact(): void {
    this.history = [];
    this.compactedRevision = this.revision;
  }

  private commit(type: WatchEventType, resource: Resource, object: KubeObject): KubeObject {
    this.revision += 1;
    object.metadata.resourceVersion = String(this.revision);
    if (type !== 'DELETED') this.table(resource).set(`${object.metadata.namespace}/${object.metadata.name}`, object);
    const event: StoredEvent = { type, resource, object: structuredClone(object), resourceVersion: this.revision };
    this.history.push(event);
    this.changes.emit('change', event);
    return structuredClone(object);
  }

  private table(resource: Resource): Map<string, KubeObject> {
    let table = this.objects.get(resource);
    if (!table) {
      table = new Map();
      this.objects.set(resource, table);
    }
    return table;
  }
}

export function matches(object: KubeObject, query: ListQuery): boolean {
  if (query.namespace && object.metadata.namespace !== query.namespace) return false;
  if (query.labelSelector && !matchesLabels(object.metadata.labels ?? {}, query.labelSelector)) return false;
  if (query.fieldSelector && !matchesFields(object, query.fieldSelector)) return false;
  return true;
}

/** Kubernetes label selector syntax: `a=b`, `a==b`, `a!=b`, `a`, `!a`, `a in (x,y)`, `a notin (x)`. */
export function matchesLabels(labels: Record<string, string>, selector: string): boolean {
  return splitSelector(selector).every((term) => {
    const set = /^([^\s!=]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(term);
    if (set) {
      const values = set[3].split(',').map((v) => v.trim());
      const has = set[1] in labels && values.includes(labels[set[1]]);
      return set[2] === 'in' ? has : !has;
    }
    const pair = /^([^\s!=]+)\s*(==|=|!=)\s*(\S*)$/.exec(term);
    if (pair) return pair[2] === '!=' ? labels[pair[1]] !== pair[3] : labels[pair[1]] === pair[3];
    if (term.startsWith('!')) return !(term.slice(1) in labels);
    return term in labels;
  });
}

function matchesFields(object: KubeObject, selector: string): boolean {
  return splitSelector(selector).every((term) => {
    const pair = /^([^\s!=]+)\s*(==|=|!=)\s*(.*)$/.exec(term);
    if (!pair) return false;
    const value = pair[1].split('.').reduce<unknown>((at, key) => (at && typeof at === 'object' ? (at as Record<string, unknown>)[key] : undefined), object);
    const equal = String(value ?? '') === pair[3];
    return pair[2] === '!=' ? !equal : equal;
  });
}

/** Splits on commas outside parentheses. */
function splitSelector(selector: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let current = '';
  for (const char of selector) {
    if (char === '(') depth += 1;
    if (char === ')') depth -= 1;
    if (char === ',' && depth === 0) {
      terms.push(current.trim());
      current = '';
    } else {
      current += char;
    }
  }
  if (current.trim()) terms.push(current.trim());
  return terms.filter(Boolean);
}

function randomSuffix(): string {
  const alphabet = 'bcdfghjklmnpqrstvwxz2456789';
  return Array.from({ length: 5 }, () => alphabet[Math.floor(Math.random() * alphabet.length)]).join('');
}
