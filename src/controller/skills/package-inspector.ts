import { crc32 } from 'node:zlib';
import * as yauzl from 'yauzl';
import { DomainError } from '../../shared/errors/domain-error';
import { parseFrontMatter, SkillManifest } from './front-matter';

/** What a package may hold (CONTRACT "Skills"): no zip bombs, no paths out of the folder. */
export interface PackageLimits {
  maxEntries: number;
  maxUncompressedBytes: number;
  /** Largest uncompressed/compressed ratio of one entry ... */
  maxEntryRatio: number;
  /** ... checked only for entries larger than this, where a high ratio starts to cost. */
  ratioFloorBytes: number;
}

export const PACKAGE_LIMITS: PackageLimits = {
  maxEntries: 10_000,
  maxUncompressedBytes: 500 * 1024 * 1024,
  maxEntryRatio: 100,
  ratioFloorBytes: 1024 * 1024,
};

const MANIFEST_NAME = 'SKILL.md';
const MANIFEST_READ_BYTES = 64 * 1024;

export interface PackageInspection {
  entryCount: number;
  uncompressedBytes: number;
  manifest: SkillManifest | null;
}

/**
 * Checks a received file as a zip archive: parses the central directory, refuses unsafe
 * names, and inflates every entry while counting, so a header that lies about its size is
 * caught by the bytes themselves. Reads SKILL.md's front matter on the way.
 *
 * yauzl reads the archive; the limits stay here because zip libraries (yauzl, adm-zip,
 * unzipper, extract-zip) read or extract archives but leave such limits to the caller: the
 * real inflated bytes against a total, the entry count and each entry's ratio are counted
 * while streaming, and refused with the contract's messages, before anything is stored.
 */
export async function inspectPackage(file: string, limits: PackageLimits = PACKAGE_LIMITS): Promise<PackageInspection> {
  let zip: yauzl.ZipFile;
  try {
    zip = await yauzl.openPromise(file, { lazyEntries: true, autoClose: false, decodeStrings: false, validateEntrySizes: false });
  } catch (error) {
    throw notAZip(error);
  }
  zip.on('error', () => undefined);
  try {
    if (zip.entryCount > limits.maxEntries) throw tooManyEntries(limits);
    return await inspectEntries(zip, limits);
  } finally {
    zip.close();
  }
}

async function inspectEntries(zip: yauzl.ZipFile, limits: PackageLimits): Promise<PackageInspection> {
  const totals = { entries: 0, declared: 0, inflated: 0 };
  let manifest: SkillManifest | null = null;
  for (let entry = await nextEntry(zip); entry; entry = await nextEntry(zip)) {
    const name = entryName(entry);
    if (isSymlink(entry)) throw unsafe(`entry "${name}" is a symbolic link`);
    totals.entries += 1;
    if (totals.entries > limits.maxEntries) throw tooManyEntries(limits);
    totals.declared += entry.uncompressedSize;
    if (totals.declared > limits.maxUncompressedBytes) throw tooLargeUncompressed(limits);
    if (entry.uncompressedSize > limits.ratioFloorBytes && entry.uncompressedSize > entry.compressedSize * limits.maxEntryRatio) {
      throw unsafe(`entry "${name}" expands more than ${limits.maxEntryRatio} times (a zip bomb)`);
    }
    const head = await inflateEntry(zip, entry, name, totals, limits);
    if (name === MANIFEST_NAME) manifest = parseFrontMatter(head.toString('utf8'));
  }
  return { entryCount: totals.entries, uncompressedBytes: totals.inflated, manifest };
}

/** Inflates one entry, counting real bytes and checking its CRC; returns its first bytes. */
async function inflateEntry(
  zip: yauzl.ZipFile,
  entry: yauzl.Entry,
  name: string,
  totals: { inflated: number },
  limits: PackageLimits,
): Promise<Buffer> {
  if (entry.uncompressedSize === 0 && entry.compressedSize === 0) return Buffer.alloc(0);
  const head: Buffer[] = [];
  let headBytes = 0;
  let inflated = 0;
  let checksum = 0;
  try {
    const stream = await zip.openReadStreamPromise(entry);
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      inflated += chunk.length;
      totals.inflated += chunk.length;
      if (inflated > entry.uncompressedSize) throw unsafe(`entry "${name}" inflates to more than its declared size`);
      if (totals.inflated > limits.maxUncompressedBytes) throw tooLargeUncompressed(limits);
      checksum = crc32(chunk, checksum);
      if (headBytes < MANIFEST_READ_BYTES) {
        head.push(chunk);
        headBytes += chunk.length;
      }
    }
  } catch (error) {
    if (error instanceof DomainError) throw error;
    throw notAZip(error, name);
  }
  if (inflated !== entry.uncompressedSize) throw notAZip(new Error('entry is shorter than its declared size'), name);
  if (checksum !== entry.crc32) throw notAZip(new Error('CRC-32 mismatch'), name);
  return Buffer.concat(head).subarray(0, MANIFEST_READ_BYTES);
}

function nextEntry(zip: yauzl.ZipFile): Promise<yauzl.Entry | null> {
  return new Promise((resolve, reject) => {
    const settle = (action: () => void) => {
      zip.off('entry', onEntry).off('end', onEnd).off('error', onError);
      action();
    };
    const onEntry = (entry: yauzl.Entry) => settle(() => resolve(entry));
    const onEnd = () => settle(() => resolve(null));
    const onError = (error: Error) => settle(() => reject(notAZip(error)));
    zip.on('entry', onEntry).on('end', onEnd).on('error', onError);
    zip.readEntry();
  });
}

/** The entry's name as unzip tools would write it, refused when it could leave the folder. */
function entryName(entry: yauzl.Entry): string {
  const name = yauzl.getFileNameLowLevel(entry.generalPurposeBitFlag, entry.fileNameRaw, entry.extraFields, false);
  const problem = name === '' ? 'empty entry name' : name.includes('\0') ? 'NUL in entry name' : yauzl.validateFileName(name);
  if (problem) throw unsafe(`unsafe entry name ${JSON.stringify(name)} (${problem.split(':')[0]})`);
  return name;
}

/** A Unix symlink entry (made on Unix, file type 0o120000): unpacked, it points anywhere. */
function isSymlink(entry: yauzl.Entry): boolean {
  const madeOnUnix = entry.versionMadeBy >> 8 === 3;
  return madeOnUnix && ((entry.externalFileAttributes >>> 16) & 0o170000) === 0o120000;
}

function unsafe(reason: string): DomainError {
  return DomainError.invalid({ file: [`the package is refused: ${reason}`] }, `The package is refused: ${reason}.`);
}

function notAZip(error: unknown, entry?: string): DomainError {
  const reason = error instanceof Error ? error.message : String(error);
  const where = entry ? ` (entry "${entry}": ${reason})` : ` (${reason})`;
  return DomainError.invalid({ file: [`is not a valid zip archive${where}`] }, `The package is not a valid zip archive${where}.`);
}

function tooManyEntries(limits: PackageLimits): DomainError {
  return unsafe(`more than ${limits.maxEntries} entries`);
}

function tooLargeUncompressed(limits: PackageLimits): DomainError {
  return unsafe(`more than ${limits.maxUncompressedBytes / 1024 / 1024} MiB uncompressed`);
}
