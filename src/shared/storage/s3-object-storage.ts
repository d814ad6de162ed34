import { Client } from 'minio';
import { Readable } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import { STORAGE_CLIENT_APP } from '../tracing/storage-client';
import { inStorageSpan, StorageCall } from '../tracing/storage-spans';
import { assertObjectKey, assertSize, ObjectBody, ObjectInfo, ObjectStorage, StoredObject } from './object-storage';

export interface S3Settings {
  endpoint: string;
  accessKey: string;
  secretKey: string;
  bucket: string;
  region: string;
}

/**
 * Streams larger than this go up as a multipart upload, one part in memory at a time, so
 * an upload never holds more than this (the `minio` client alone would buffer up to 64 MiB).
 * S3's smallest part is 5 MiB; 8 MiB parts allow objects up to 80 GB (10,000 parts).
 */
export const S3_PART_SIZE = 8 * 1024 * 1024;

/** Objects in an S3 bucket (MinIO or any S3), through the `minio` client. */
export class S3ObjectStorage implements ObjectStorage {
  private readonly client: Client;
  private bucketReady: Promise<void> | null = null;
  private readonly server: StorageCall['server'];

  constructor(private readonly settings: S3Settings) {
    const url = new URL(settings.endpoint);
    const useSSL = url.protocol === 'https:';
    const port = url.port ? Number(url.port) : undefined;
    this.server = { address: url.hostname, port: port ?? (useSSL ? 443 : 80) };
    this.client = new Client({
      endPoint: url.hostname,
      port,
      useSSL,
      accessKey: settings.accessKey,
      secretKey: settings.secretKey,
      region: settings.region,
      pathStyle: true,
    });
    // Its requests are traced by `traced` below, not by the http instrumentation (storage-spans.ts).
    this.client.setAppInfo(STORAGE_CLIENT_APP, '1');
  }

  /** One operation of the store, in a span of its own when tracing runs. */
  private traced<T>(operation: string, key: string | undefined, work: () => Promise<T>): Promise<T> {
    return inStorageSpan({ operation, bucket: this.settings.bucket, key, server: this.server }, work);
  }

  /** Creates the bucket when it is missing; called once, lazily, by every operation. */
  ensureBucket(): Promise<void> {
    this.bucketReady ??= (async () => {
      const exists = await this.client.bucketExists(this.settings.bucket);
      if (!exists) await this.client.makeBucket(this.settings.bucket, this.settings.region);
    })().catch((error: unknown) => {
      this.bucketReady = null;
      throw error;
    });
    return this.bucketReady;
  }

  /** One request for a buffer or a stream of one part; what was stored is known without a HEAD. */
  async put(key: string, body: Buffer | Readable, options: { size?: number; contentType?: string } = {}): Promise<StoredObject> {
    assertObjectKey(key);
    return this.traced('PutObject', key, () => this.putChecked(key, body, options));
  }

  private async putChecked(key: string, body: Buffer | Readable, options: { size?: number; contentType?: string }): Promise<StoredObject> {
    await this.ensureBucket();
    const metadata: Record<string, string> = options.contentType ? { 'Content-Type': options.contentType } : {};
    if (Buffer.isBuffer(body)) {
      await this.client.putObject(this.settings.bucket, key, body, body.length, metadata);
      return { key, size: body.length };
    }
    return { key, size: await this.putStream(key, body, options.size, metadata) };
  }

  /**
   * A stream that fits in one part goes up in one request; a larger one as a multipart
   * upload with one part in memory at a time, aborted when the stream fails. Either way a
   * stream that brings another size than announced is refused and nothing is kept. (The
   * client's own streaming upload first looks for an unfinished upload of the same key to
   * resume, which could join two concurrent uploads of one key.)
   */
  private async putStream(key: string, body: Readable, size: number | undefined, headers: Record<string, string>): Promise<number> {
    const { bucket } = this.settings;
    const parts = partsOf(body, S3_PART_SIZE);
    const first = await parts.next();
    const firstPart = first.done ? Buffer.alloc(0) : first.value;
    if (firstPart.length < S3_PART_SIZE) {
      assertSize(key, firstPart.length, size);
      await this.client.putObject(bucket, key, firstPart, firstPart.length, headers);
      return firstPart.length;
    }
    const uploadId = await this.client.initiateNewMultipartUpload(bucket, key, headers);
    try {
      const uploaded: { part: number; etag: string }[] = [];
      let received = 0;
      for (let next: IteratorResult<Buffer> = first; !next.done; next = await parts.next()) {
        received += next.value.length;
        if (size !== undefined && received > size) break;
        const part = uploaded.length + 1;
        const { etag } = await this.client.uploadPart(
          { bucketName: bucket, objectName: key, uploadID: uploadId, partNumber: part, headers: { 'Content-Length': String(next.value.length) } },
          next.value,
        );
        uploaded.push({ part, etag });
      }
      assertSize(key, received, size);
      await this.client.completeMultipartUpload(bucket, key, uploadId, uploaded);
      return received;
    } catch (error) {
      await this.client.abortMultipartUpload(bucket, key, uploadId).catch(() => undefined);
      throw error;
    }
  }

  async get(key: string): Promise<Readable | null> {
    return (await this.open(key))?.body ?? null;
  }

  /** One GET: the response is the body, and its `content-length` the size. */
  async open(key: string): Promise<ObjectBody | null> {
    assertObjectKey(key);
    return this.traced('GetObject', key, () => this.openChecked(key));
  }

  private async openChecked(key: string): Promise<ObjectBody | null> {
    await this.ensureBucket();
    try {
      const response = (await this.client.getObject(this.settings.bucket, key)) as IncomingMessage;
      const length = response.headers['content-length'];
      // S3 sends the length of every whole object; a store that streams without one is asked.
      const size = length === undefined ? (await this.stat(key))?.size : Number(length);
      if (size === undefined) {
        response.destroy();
        return null;
      }
      return { body: response, size };
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  async stat(key: string): Promise<ObjectInfo | null> {
    assertObjectKey(key);
    return this.traced('HeadObject', key, () => this.statChecked(key));
  }

  private async statChecked(key: string): Promise<ObjectInfo | null> {
    await this.ensureBucket();
    try {
      const stat = await this.client.statObject(this.settings.bucket, key);
      const contentType = (stat.metaData?.['content-type'] as string | undefined) ?? null;
      return { key, size: stat.size, contentType, lastModified: stat.lastModified };
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  async exists(key: string): Promise<boolean> {
    return (await this.stat(key)) !== null;
  }

  async delete(key: string): Promise<void> {
    assertObjectKey(key);
    await this.traced('DeleteObject', key, async () => {
      await this.ensureBucket();
      await this.client.removeObject(this.settings.bucket, key);
    });
  }

  async deleteFolder(prefix: string): Promise<number> {
    assertObjectKey(prefix);
    return this.traced('DeleteObjects', `${prefix}/`, () => this.deleteFolderChecked(prefix));
  }

  private async deleteFolderChecked(prefix: string): Promise<number> {
    await this.ensureBucket();
    const keys: string[] = [];
    for await (const item of this.client.listObjectsV2(this.settings.bucket, `${prefix}/`, true) as AsyncIterable<{ name?: string }>) {
      if (item.name) keys.push(item.name);
    }
    // removeObjects sends them in batches of 1,000, S3's limit for one request.
    if (keys.length > 0) await this.client.removeObjects(this.settings.bucket, keys);
    return keys.length;
  }

  async ping(): Promise<void> {
    this.bucketReady = null;
    await this.ensureBucket();
  }
}

/** The stream cut into buffers of `partSize` bytes, the last one shorter. */
async function* partsOf(stream: Readable, partSize: number): AsyncGenerator<Buffer> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  for await (const chunk of stream) {
    let data = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
    while (pendingBytes + data.length >= partSize) {
      const take = partSize - pendingBytes;
      yield Buffer.concat([...pending, data.subarray(0, take)]);
      data = data.subarray(take);
      pending = [];
      pendingBytes = 0;
    }
    if (data.length > 0) {
      pending.push(data);
      pendingBytes += data.length;
    }
  }
  if (pendingBytes > 0) yield Buffer.concat(pending);
}

function isNotFound(error: unknown): boolean {
  const code = (error as { code?: string }).code;
  return code === 'NoSuchKey' || code === 'NotFound' || code === 'NoSuchObject';
}
