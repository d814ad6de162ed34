import { Client } from 'minio';
import { Readable } from 'node:stream';
import { assertObjectKey, ObjectInfo, ObjectStorage } from './object-storage';

export interface S3Settings {
  endpoint: string;
  accessKey: string;
  secretKey: string;
  bucket: string;
  region: string;
}

/** Objects in an S3 bucket (MinIO or any S3), through the `minio` client. */
export class S3ObjectStorage implements ObjectStorage {
  private readonly client: Client;
  private bucketReady: Promise<void> | null = null;

  constructor(private readonly settings: S3Settings) {
    const url = new URL(settings.endpoint);
    this.client = new Client({
      endPoint: url.hostname,
      port: url.port ? Number(url.port) : undefined,
      useSSL: url.protocol === 'https:',
      accessKey: settings.accessKey,
      secretKey: settings.secretKey,
      region: settings.region,
      pathStyle: true,
    });
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

  async put(key: string, body: Buffer | Readable, options: { size?: number; contentType?: string } = {}): Promise<ObjectInfo> {
    assertObjectKey(key);
    await this.ensureBucket();
    const size = Buffer.isBuffer(body) ? body.length : options.size;
    const metadata = options.contentType ? { 'Content-Type': options.contentType } : {};
    await this.client.putObject(this.settings.bucket, key, body, size, metadata);
    return (await this.stat(key))!;
  }

  async get(key: string): Promise<Readable | null> {
    assertObjectKey(key);
    await this.ensureBucket();
    try {
      return await this.client.getObject(this.settings.bucket, key);
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  async stat(key: string): Promise<ObjectInfo | null> {
    assertObjectKey(key);
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
    await this.ensureBucket();
    await this.client.removeObject(this.settings.bucket, key);
  }

  async ping(): Promise<void> {
    this.bucketReady = null;
    await this.ensureBucket();
  }
}

function isNotFound(error: unknown): boolean {
  const code = (error as { code?: string }).code;
  return code === 'NoSuchKey' || code === 'NotFound' || code === 'NoSuchObject';
}
