import { Readable } from 'node:stream';
import { DomainError } from '../errors/domain-error';

export interface ObjectInfo {
  key: string;
  size: number;
  contentType: string | null;
  lastModified: Date;
}

/** What a put knows of the object it stored, without asking the store again. */
export interface StoredObject {
  key: string;
  size: number;
}

/** An object's bytes with their length, as one read gives them. */
export interface ObjectBody {
  body: Readable;
  size: number;
}

/**
 * Object storage: an S3 bucket in production, a folder under DATA_DIR in embedded mode.
 * Keys are relative, `/`-separated paths (see `assertObjectKey`).
 */
export interface ObjectStorage {
  /**
   * Stores a body. With a stream, `size` is what it must bring (else the put fails and keeps
   * nothing); S3 sends a small object in one request and a large one in bounded parts.
   */
  put(key: string, body: Buffer | Readable, options?: { size?: number; contentType?: string }): Promise<StoredObject>;
  /** The object's bytes, or null when there is no such object. */
  get(key: string): Promise<Readable | null>;
  /** The object's bytes and their length in one request, or null when there is no such object. */
  open(key: string): Promise<ObjectBody | null>;
  stat(key: string): Promise<ObjectInfo | null>;
  exists(key: string): Promise<boolean>;
  delete(key: string): Promise<void>;
  /** Deletes every object whose key starts with `prefix/` (a folder of objects); answers how many. */
  deleteFolder(prefix: string): Promise<number>;
  ping(): Promise<void>;
}

export const OBJECT_STORAGE = Symbol('OBJECT_STORAGE');

const KEY_PATTERN = /^[A-Za-z0-9!_.*'()@=+,;:$-]+(\/[A-Za-z0-9!_.*'()@=+,;:$-]+)*$/;

/** Refuses keys that could escape their folder or that S3 and a file system would read differently. */
export function assertObjectKey(key: string): void {
  const segments = key.split('/');
  if (
    key.length === 0 ||
    key.length > 1024 ||
    !KEY_PATTERN.test(key) ||
    segments.some((segment) => segment === '.' || segment === '..')
  ) {
    throw DomainError.invalid({ key: ['must be a relative path of letters, digits and -_.!*\'()@=+,;:$ with no "." or ".." parts'] });
  }
}

export async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  return Buffer.concat(chunks);
}

/** Refuses a stream that brought another number of bytes than its put announced. */
export function assertSize(key: string, received: number, announced: number | undefined): void {
  if (announced !== undefined && received !== announced) {
    throw new Error(`the stream for ${key} brought ${received > announced ? 'more' : 'fewer'} bytes (${received}) than its announced ${announced}`);
  }
}
