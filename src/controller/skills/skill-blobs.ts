import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { Inject, Injectable } from '@nestjs/common';
import { OBJECT_STORAGE, ObjectStorage } from '../../shared/storage/object-storage';
import { ReceivedPackage } from './package-upload';

/** Packages are stored by content, so equal bytes are one object across every skill. */
export function blobKey(contentHash: string): string {
  return `skills/sha256/${contentHash}.zip`;
}

/** The skill packages in object storage. */
@Injectable()
export class SkillBlobs {
  constructor(@Inject(OBJECT_STORAGE) private readonly storage: ObjectStorage) {}

  /** Stores the package unless its bytes are already there; true when this call stored them. */
  async storeOnce(received: ReceivedPackage): Promise<boolean> {
    const key = blobKey(received.contentHash);
    const existing = await this.storage.stat(key);
    if (existing && existing.size === received.sizeBytes) return false;
    // The size is checked against what the file brings; S3 takes a large package in bounded parts.
    await this.storage.put(key, createReadStream(received.path), { size: received.sizeBytes, contentType: 'application/zip' });
    return true;
  }

  open(key: string): Promise<Readable | null> {
    return this.storage.get(key);
  }

  remove(key: string): Promise<void> {
    return this.storage.delete(key);
  }
}
