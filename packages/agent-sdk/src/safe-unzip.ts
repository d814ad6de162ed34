import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import * as path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type * as yauzl from 'yauzl';

/** What an archive may hold when unpacked: the controller's own package limits. */
export interface UnzipLimits {
  maxEntries: number;
  maxUncompressedBytes: number;
}

export const DEFAULT_UNZIP_LIMITS: UnzipLimits = { maxEntries: 10_000, maxUncompressedBytes: 500 * 1024 * 1024 };

/** An archive refused on the way out: an unsafe name, a link, or more than the limits allow. */
export class UnsafeArchiveError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnsafeArchiveError';
  }
}

const S_IFMT = 0o170000;
const S_IFLNK = 0o120000;

/**
 * Unpacks a zip archive into `target` (which must not exist yet or be empty): no absolute or
 * `..` names, no symbolic links, and the entry count and inflated bytes (counted as they
 * are written, so a header that lies about sizes is caught) within `limits`.
 */
export async function unzipSafely(archive: Buffer, target: string, limits: UnzipLimits = DEFAULT_UNZIP_LIMITS): Promise<number> {
  // Loaded here, not with the client: an agent without skills never pays for it at its start.
  const { fromBufferPromise } = await import('yauzl');
  const zip = await fromBufferPromise(archive, { lazyEntries: true, validateEntrySizes: true, strictFileNames: true });
  if (zip.entryCount > limits.maxEntries) throw new UnsafeArchiveError(`the archive has ${zip.entryCount} entries; at most ${limits.maxEntries} are unpacked`);
  const root = path.resolve(target);
  await mkdir(root, { recursive: true });
  const written = { bytes: 0, entries: 0 };
  try {
    for (let entry = await nextEntry(zip); entry; entry = await nextEntry(zip)) {
      await unpackEntry(zip, entry, root, written, limits);
    }
  } catch (error) {
    // yauzl's own refusals (an absolute or `..` name, a size that lies) are unsafe archives too.
    throw error instanceof UnsafeArchiveError ? error : new UnsafeArchiveError(`the archive cannot be unpacked: ${(error as Error).message}`);
  } finally {
    zip.close();
  }
  return written.entries;
}

async function unpackEntry(zip: yauzl.ZipFile, entry: yauzl.Entry, root: string, written: { bytes: number; entries: number }, limits: UnzipLimits): Promise<void> {
  const name = entry.fileName;
  const destination = path.resolve(root, name);
  if (path.isAbsolute(name) || name.split(/[\\/]/).includes('..') || !destination.startsWith(root + path.sep)) {
    throw new UnsafeArchiveError(`entry "${name}" would be written outside the skill's folder`);
  }
  if (((entry.externalFileAttributes >>> 16) & S_IFMT) === S_IFLNK) throw new UnsafeArchiveError(`entry "${name}" is a symbolic link`);
  written.entries += 1;
  if (name.endsWith('/')) {
    await mkdir(destination, { recursive: true });
    return;
  }
  await mkdir(path.dirname(destination), { recursive: true });
  const meter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      written.bytes += chunk.length;
      if (written.bytes > limits.maxUncompressedBytes) done(new UnsafeArchiveError(`the archive inflates past ${limits.maxUncompressedBytes} bytes`));
      else done(null, chunk);
    },
  });
  await pipeline(await zip.openReadStreamPromise(entry), meter, createWriteStream(destination, { flags: 'wx', mode: 0o644 }));
}

function nextEntry(zip: yauzl.ZipFile): Promise<yauzl.Entry | null> {
  return new Promise((resolve, reject) => {
    const cleanup = () => zip.off('entry', onEntry).off('end', onEnd).off('error', onError);
    const onEntry = (entry: yauzl.Entry) => (cleanup(), resolve(entry));
    const onEnd = () => (cleanup(), resolve(null));
    const onError = (error: Error) => (cleanup(), reject(error));
    zip.on('entry', onEntry).on('end', onEnd).on('error', onError);
    zip.readEntry();
  });
}
