import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { readManifest, unzipSafely, UnsafeArchiveError } from '@agent-task/agent-sdk';
import { buildZip } from '../harness/zip-builder';

describe('unpacking a skill package safely', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(path.join(tmpdir(), 'unzip-spec-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  const target = () => path.join(root, 'skill');

  it('unpacks files and folders and reads SKILL.md front matter as YAML', async () => {
    const skillMd = '---\nname: lint\ndescription: |\n  Lints the code.\n  Twice.\nmetadata:\n  tags: [style, ci]\n---\n# Lint\n';
    const archive = buildZip([{ name: 'SKILL.md', data: skillMd }, { name: 'scripts/', data: '' }, { name: 'scripts/run.sh', data: 'echo lint\n' }]);
    expect(await unzipSafely(archive, target())).toBe(3);
    expect(readFileSync(path.join(target(), 'scripts/run.sh'), 'utf8')).toBe('echo lint\n');
    expect(await readManifest(target())).toEqual({ name: 'lint', description: 'Lints the code.\nTwice.\n', metadata: { tags: ['style', 'ci'] } });
  });

  it('answers null for a package without SKILL.md front matter', async () => {
    await unzipSafely(buildZip([{ name: 'SKILL.md', data: '# no front matter' }]), target());
    expect(await readManifest(target())).toBeNull();
  });

  it.each([
    ['a .. name', [{ name: '../escape.txt', data: 'x' }], /outside|relative path/],
    ['a nested .. name', [{ name: 'a/../../escape.txt', data: 'x' }], /outside|relative path/],
    ['an absolute name', [{ name: '/etc/escape.txt', data: 'x' }], /outside|absolute path/],
    ['a symbolic link', [{ name: 'link', data: '/etc/passwd', unixMode: 0o120777 }], /symbolic link/],
  ])('refuses %s and writes nothing outside the folder', async (_what, entries, reason) => {
    const attempt = unzipSafely(buildZip(entries), target());
    await expect(attempt).rejects.toThrow(UnsafeArchiveError);
    await expect(unzipSafely(buildZip(entries), path.join(root, 'again'))).rejects.toThrow(reason);
    expect(readdirSync(root).sort()).toEqual(['again', 'skill']);
    expect(readdirSync(target())).toEqual([]);
  });

  it('refuses more entries than the limit', async () => {
    const entries = Array.from({ length: 5 }, (_, index) => ({ name: `f${index}.txt`, data: 'x' }));
    await expect(unzipSafely(buildZip(entries), target(), { maxEntries: 4, maxUncompressedBytes: 1024 })).rejects.toThrow(/5 entries; at most 4/);
  });

  it('counts the bytes it inflates, whatever the headers declare', async () => {
    const archive = buildZip([{ name: 'big.bin', data: Buffer.alloc(64 * 1024), declaredSize: 10 }]);
    await expect(unzipSafely(archive, target(), { maxEntries: 10, maxUncompressedBytes: 1024 })).rejects.toThrow(UnsafeArchiveError);
    const honest = buildZip([{ name: 'big.bin', data: Buffer.alloc(64 * 1024) }]);
    await expect(unzipSafely(honest, path.join(root, 'honest'), { maxEntries: 10, maxUncompressedBytes: 1024 })).rejects.toThrow(/inflates past 1024 bytes/);
  });
});
