import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { buildZip, skillPackage, ZipEntrySpec } from '../../../test/harness/zip-builder';
import { DomainError } from '../../shared/errors/domain-error';
import { inspectPackage, PACKAGE_LIMITS } from './package-inspector';

describe('inspectPackage', () => {
  const folder = mkdtempSync(path.join(tmpdir(), 'skill-packages-'));
  afterAll(() => rmSync(folder, { recursive: true, force: true }));

  function packageFile(bytes: Buffer): string {
    const file = path.join(folder, `${randomBytes(6).toString('hex')}.zip`);
    writeFileSync(file, bytes);
    return file;
  }

  async function refusal(bytes: Buffer, limits = PACKAGE_LIMITS): Promise<string> {
    const error = await inspectPackage(packageFile(bytes), limits).then(() => null, (e: unknown) => e);
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).status).toBe(400);
    return (error as DomainError).message;
  }

  const zipOf = (...entries: ZipEntrySpec[]) => buildZip(entries);

  it('accepts a package and reads the front matter of its root SKILL.md', async () => {
    const inspection = await inspectPackage(packageFile(skillPackage({ name: 'Reviewer', description: 'Reviews code.' })));
    expect(inspection.entryCount).toBe(2);
    expect(inspection.manifest).toEqual({ name: 'Reviewer', description: 'Reviews code.' });
  });

  it('has no manifest when SKILL.md is missing or not at the root', async () => {
    const inspection = await inspectPackage(packageFile(zipOf({ name: 'docs/SKILL.md', data: '---\nname: x\n---\n' })));
    expect(inspection.manifest).toBeNull();
  });

  it('accepts stored entries and directories', async () => {
    const inspection = await inspectPackage(packageFile(zipOf({ name: 'dir/' }, { name: 'dir/a.bin', data: randomBytes(1000), store: true })));
    expect(inspection.uncompressedBytes).toBe(1000);
  });

  it.each([
    ['a text file', Buffer.from('this is not a zip archive\n')],
    ['an empty file', Buffer.alloc(0)],
    ['a truncated zip', skillPackage().subarray(0, 60)],
  ])('refuses %s as not a zip', async (_label, bytes) => {
    expect(await refusal(bytes)).toMatch(/not a valid zip/);
  });

  it('refuses a zip whose entry data is corrupt', async () => {
    const bytes = zipOf({ name: 'a.txt', data: 'hello hello hello', store: true });
    bytes[30 + 'a.txt'.length] ^= 0xff;
    expect(await refusal(bytes)).toMatch(/CRC-32/);
  });

  it.each(['../escape.txt', 'a/../../escape.txt', '/etc/passwd', 'C:/windows/x', 'a\\..\\b'])('refuses the entry name %s', async (name) => {
    expect(await refusal(zipOf({ name, data: 'x' }))).toMatch(/unsafe entry name/);
  });

  it('refuses an entry that expands like a zip bomb', async () => {
    expect(await refusal(zipOf({ name: 'zeros.bin', data: Buffer.alloc(8 * 1024 * 1024) }))).toMatch(/zip bomb/);
  });

  it('refuses an entry that inflates past the size its headers declare', async () => {
    const bytes = zipOf({ name: 'liar.bin', data: Buffer.alloc(4 * 1024 * 1024), declaredSize: 100 });
    expect(await refusal(bytes)).toMatch(/more than its declared size/);
  });

  it('refuses more uncompressed bytes in total than allowed', async () => {
    const limits = { ...PACKAGE_LIMITS, maxUncompressedBytes: 1500 };
    const bytes = zipOf({ name: 'a', data: randomBytes(1000) }, { name: 'b', data: randomBytes(1000) });
    expect(await refusal(bytes, limits)).toMatch(/uncompressed/);
  });

  it('refuses more entries than allowed', async () => {
    const limits = { ...PACKAGE_LIMITS, maxEntries: 3 };
    const bytes = buildZip(Array.from({ length: 4 }, (_, i) => ({ name: `f${i}.txt`, data: 'x' })));
    expect(await refusal(bytes, limits)).toMatch(/more than 3 entries/);
  });
});
