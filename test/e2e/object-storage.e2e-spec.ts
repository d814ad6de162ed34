import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Readable } from 'node:stream';
import { Client } from 'minio';
import { DomainError } from '../../src/shared/errors/domain-error';
import { FolderObjectStorage } from '../../src/shared/storage/folder-object-storage';
import { ObjectStorage, readAll } from '../../src/shared/storage/object-storage';
import { S3_PART_SIZE, S3ObjectStorage } from '../../src/shared/storage/s3-object-storage';
import { testServices } from '../harness/services';

function s3Storage(bucket: string): S3ObjectStorage {
  return new S3ObjectStorage({
    endpoint: testServices().s3Endpoint,
    accessKey: 'S3RVER',
    secretKey: 'S3RVER',
    bucket,
    region: 'us-east-1',
  });
}

const implementations: [string, () => ObjectStorage][] = [
  ['folder', () => new FolderObjectStorage(fs.mkdtempSync(path.join(process.env.ATC_TEST_WORK_DIR!, 'objects-')))],
  ['s3', () => s3Storage(`spec-${randomBytes(4).toString('hex')}`)],
];

describe.each(implementations)('%s object storage', (_name, create) => {
  let storage: ObjectStorage;
  beforeEach(() => {
    storage = create();
  });

  it('stores a buffer and reads back the same bytes with their size', async () => {
    const body = randomBytes(4096);
    const info = await storage.put('briefs/a.json', body, { contentType: 'application/json' });
    expect(info).toMatchObject({ key: 'briefs/a.json', size: 4096 });
    expect(await readAll((await storage.get('briefs/a.json'))!)).toEqual(body);
    expect(await storage.exists('briefs/a.json')).toBe(true);
    const opened = await storage.open('briefs/a.json');
    expect(opened?.size).toBe(4096);
    expect(await readAll(opened!.body)).toEqual(body);
  });

  it('stores a stream of known size', async () => {
    const body = randomBytes(300 * 1024);
    await storage.put('skills/sha256/x.zip', Readable.from([body.subarray(0, 1000), body.subarray(1000)]), { size: body.length });
    const back = await readAll((await storage.get('skills/sha256/x.zip'))!);
    expect(createHash('sha256').update(back).digest('hex')).toBe(createHash('sha256').update(body).digest('hex'));
  });

  it('stores a stream larger than one upload part, in parts, and reads back the same bytes', async () => {
    const body = randomBytes(2 * S3_PART_SIZE + 12345);
    const chunks = Array.from({ length: Math.ceil(body.length / 65536) }, (_, i) => body.subarray(i * 65536, (i + 1) * 65536));
    const info = await storage.put('skills/sha256/large.zip', Readable.from(chunks), { size: body.length, contentType: 'application/zip' });
    expect(info).toMatchObject({ key: 'skills/sha256/large.zip', size: body.length });
    const back = await readAll((await storage.get('skills/sha256/large.zip'))!);
    expect(back.length).toBe(body.length);
    expect(createHash('sha256').update(back).digest('hex')).toBe(createHash('sha256').update(body).digest('hex'));
  });

  it('refuses a large stream that fails half-way or brings fewer bytes than announced, keeping nothing', async () => {
    const part = randomBytes(S3_PART_SIZE);
    async function* failing() {
      yield part;
      yield part;
      throw new Error('the client went away');
    }
    await expect(storage.put('skills/sha256/broken.zip', Readable.from(failing()), { size: 3 * part.length })).rejects.toThrow('the client went away');
    expect(await storage.exists('skills/sha256/broken.zip')).toBe(false);
    await expect(storage.put('skills/sha256/short.zip', Readable.from([part, part]), { size: 3 * part.length })).rejects.toThrow();
    expect(await storage.exists('skills/sha256/short.zip')).toBe(false);
  });

  it('refuses a small stream that brings another size than announced, keeping nothing', async () => {
    await expect(storage.put('results/t/short.json', Readable.from([Buffer.from('{"a":1}')]), { size: 100 })).rejects.toThrow('fewer bytes');
    await expect(storage.put('results/t/long.json', Readable.from([Buffer.alloc(200)]), { size: 100 })).rejects.toThrow();
    expect(await storage.exists('results/t/short.json')).toBe(false);
    expect(await storage.exists('results/t/long.json')).toBe(false);
  });

  it('stores a stream of unknown size, empty or not', async () => {
    expect(await storage.put('results/t/empty.txt', Readable.from([]))).toEqual({ key: 'results/t/empty.txt', size: 0 });
    expect((await storage.stat('results/t/empty.txt'))?.size).toBe(0);
    expect(await storage.put('results/t/some.txt', Readable.from([Buffer.from('abc'), Buffer.from('def')]))).toEqual({ key: 'results/t/some.txt', size: 6 });
    expect((await readAll((await storage.get('results/t/some.txt'))!)).toString()).toBe('abcdef');
  });

  it('answers null for a missing object and deletes what exists', async () => {
    expect(await storage.get('nothing/here')).toBeNull();
    expect(await storage.open('nothing/here')).toBeNull();
    expect(await storage.stat('nothing/here')).toBeNull();
    await storage.put('results/t/r.txt', Buffer.from('x'));
    await storage.delete('results/t/r.txt');
    expect(await storage.exists('results/t/r.txt')).toBe(false);
    await expect(storage.delete('results/t/r.txt')).resolves.toBeUndefined();
  });

  it.each(['../etc/passwd', '/abs', 'a/../b', 'a//b', '', 'a/./b', 'sp ace'])('refuses the key %j', async (key) => {
    await expect(storage.put(key, Buffer.from('x'))).rejects.toBeInstanceOf(DomainError);
    await expect(storage.get(key)).rejects.toMatchObject({ code: 'invalid' });
  });

  it('answers ping', async () => {
    await expect(storage.ping()).resolves.toBeUndefined();
  });
});

it('creates its bucket when missing', async () => {
  const bucket = `spec-new-${randomBytes(4).toString('hex')}`;
  await s3Storage(bucket).put('a', Buffer.from('x'));
  const url = new URL(testServices().s3Endpoint);
  const client = new Client({ endPoint: url.hostname, port: Number(url.port), useSSL: false, accessKey: 'S3RVER', secretKey: 'S3RVER', pathStyle: true });
  expect(await client.bucketExists(bucket)).toBe(true);
});

it('a folder put that fails half-way leaves nothing behind', async () => {
  const root = fs.mkdtempSync(path.join(process.env.ATC_TEST_WORK_DIR!, 'objects-'));
  const storage = new FolderObjectStorage(root);
  const failing = new Readable({
    read() {
      this.push(Buffer.alloc(1024));
      this.destroy(new Error('client went away'));
    },
  });
  await expect(storage.put('skills/half.zip', failing)).rejects.toThrow('client went away');
  expect(fs.readdirSync(path.join(root, 'skills'))).toEqual([]);
});
