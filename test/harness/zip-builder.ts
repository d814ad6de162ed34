import { deflateRawSync, crc32 } from 'node:zlib';

/** One entry of a hand-built zip; the optional fields let a spec make an archive lie. */
export interface ZipEntrySpec {
  name: string;
  data?: Buffer | string;
  /** Deflate (default) or store. */
  store?: boolean;
  /** Uncompressed size written in the headers, instead of the real one. */
  declaredSize?: number;
  /** A Unix file mode for the central directory (as zip tools on Unix write it): 0o120777 is a symlink. */
  unixMode?: number;
}

/**
 * Builds a zip archive byte by byte (local headers, data, central directory, end record),
 * so specs can make what archiving tools refuse to: `../` names, lying sizes, bombs.
 */
export function buildZip(entries: ZipEntrySpec[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const raw = Buffer.isBuffer(entry.data) ? entry.data : Buffer.from(entry.data ?? '');
    const body = entry.store ? raw : deflateRawSync(raw);
    const name = Buffer.from(entry.name, 'utf8');
    const fields = { method: entry.store ? 0 : 8, crc: crc32(raw), compressed: body.length, size: entry.declaredSize ?? raw.length };
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    writeCommon(local, 4, fields, name.length);
    locals.push(local, name, body);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    // Made by: Unix (3) when a mode is given, so readers take the high half of the external attributes as it.
    central.writeUInt16LE(entry.unixMode === undefined ? 20 : (3 << 8) | 20, 4);
    writeCommon(central, 6, fields, name.length);
    if (entry.unixMode !== undefined) central.writeUInt32LE((entry.unixMode << 16) >>> 0, 38);
    central.writeUInt32LE(offset, 42);
    centrals.push(central, name);
    offset += local.length + name.length + body.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

/** Version needed, flags (UTF-8 names), method, time, date, CRC, sizes, name length. */
function writeCommon(header: Buffer, at: number, fields: { method: number; crc: number; compressed: number; size: number }, nameLength: number): void {
  header.writeUInt16LE(20, at);
  header.writeUInt16LE(0x0800, at + 2);
  header.writeUInt16LE(fields.method, at + 4);
  header.writeUInt16LE(0, at + 6);
  header.writeUInt16LE(0x21, at + 8);
  header.writeUInt32LE(fields.crc >>> 0, at + 10);
  header.writeUInt32LE(fields.compressed, at + 14);
  header.writeUInt32LE(fields.size, at + 18);
  header.writeUInt16LE(nameLength, at + 22);
}

/** A small valid skill package: a SKILL.md with front matter and one more file. */
export function skillPackage(options: { name?: string; description?: string; extra?: string } = {}): Buffer {
  const manifest = `---\nname: ${options.name ?? 'Example skill'}\ndescription: ${options.description ?? 'Does an example thing.'}\n---\n\n# Usage\n`;
  return buildZip([
    { name: 'SKILL.md', data: manifest },
    { name: 'scripts/run.sh', data: `#!/bin/sh\necho ${options.extra ?? 'hello'}\n` },
  ]);
}
