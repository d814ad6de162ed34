import { randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream, promises as fs } from 'node:fs';
import * as path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { assertObjectKey, assertSize, ObjectBody, ObjectInfo, ObjectStorage, StoredObject } from './object-storage';

/**
 * Objects as files under one folder. A put writes a temporary file and renames it into
 * place, so a reader never sees half an object and a failed upload leaves nothing.
 * Content types are not kept: readers of this store know what they stored.
 */
export class FolderObjectStorage implements ObjectStorage {
  constructor(private readonly root: string) {}

  async put(key: string, body: Buffer | Readable, options: { size?: number } = {}): Promise<StoredObject> {
    const target = this.pathOf(key);
    await fs.mkdir(path.dirname(target), { recursive: true });
    const temporary = path.join(path.dirname(target), `.${path.basename(target)}.${randomUUID()}.partial`);
    try {
      if (Buffer.isBuffer(body)) await fs.writeFile(temporary, body);
      else await pipeline(body, createWriteStream(temporary));
      const { size } = await fs.stat(temporary);
      assertSize(key, size, options.size);
      await fs.rename(temporary, target);
      return { key, size };
    } catch (error) {
      await fs.rm(temporary, { force: true });
      throw error;
    }
  }

  async get(key: string): Promise<Readable | null> {
    return (await this.open(key))?.body ?? null;
  }

  async open(key: string): Promise<ObjectBody | null> {
    const info = await this.stat(key);
    return info ? { body: createReadStream(this.pathOf(key)), size: info.size } : null;
  }

  async stat(key: string): Promise<ObjectInfo | null> {
    const file = this.pathOf(key);
    try {
      const stats = await fs.stat(file);
      if (!stats.isFile()) return null;
      return { key, size: stats.size, contentType: null, lastModified: stats.mtime };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ENOTDIR') return null;
      throw error;
    }
  }

  async exists(key: string): Promise<boolean> {
    return (await this.stat(key)) !== null;
  }

  async delete(key: string): Promise<void> {
    const file = this.pathOf(key);
    await fs.rm(file, { force: true });
  }

  async deleteFolder(prefix: string): Promise<number> {
    const folder = this.pathOf(prefix);
    const entries = await fs.readdir(folder, { recursive: true, withFileTypes: true }).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT' || error.code === 'ENOTDIR') return [];
      throw error;
    });
    await fs.rm(folder, { recursive: true, force: true });
    return entries.filter((entry) => entry.isFile()).length;
  }

  async ping(): Promise<void> {
    await fs.mkdir(this.root, { recursive: true });
    await fs.access(this.root);
  }

  private pathOf(key: string): string {
    assertObjectKey(key);
    return path.join(this.root, ...key.split('/'));
  }
}
