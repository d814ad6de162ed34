import { randomBytes } from 'node:crypto';
import { http } from '../harness/http';
import { randomPackage, sha256, skillsApi } from '../harness/skills';
import { startTestSystem, TestSystem } from '../harness/system';
import { buildZip, skillPackage } from '../harness/zip-builder';

const MAX_PACKAGE_BYTES = 256 * 1024;

/** Packages every upload must refuse with 400, and the reason each is refused for. */
const REFUSED: Array<[string, () => Buffer, RegExp]> = [
  ['a text file named .zip', () => Buffer.from('just some text, not an archive\n'), /not a valid zip/],
  ['a truncated zip', () => randomPackage(20_000).subarray(0, 15_000), /not a valid zip/],
  ['a zip with a ../ entry', () => buildZip([{ name: '../../etc/cron.d/job', data: '* * * * * root sh' }]), /unsafe entry name/],
  ['a zip with an absolute entry', () => buildZip([{ name: '/tmp/x', data: 'x' }]), /unsafe entry name/],
  ['a zip bomb', () => buildZip([{ name: 'bomb.bin', data: Buffer.alloc(40 * 1024 * 1024) }]), /zip bomb/],
  ['a zip with a symbolic link to /etc/passwd', () => buildZip([{ name: 'SKILL.md', data: 'x' }, { name: 'passwd', data: '/etc/passwd', store: true, unixMode: 0o120777 }]), /symbolic link/],
  ['a zip with a symbolic link out of the folder', () => buildZip([{ name: 'up', data: '../../..', store: true, unixMode: 0o120777 }]), /symbolic link/],
  ['a zip whose header lies about its size', () => buildZip([{ name: 'liar.bin', data: Buffer.alloc(2 * 1024 * 1024), declaredSize: 10 }]), /declared size/],
];

describe.each(['folder', 's3'] as const)('skill upload refusals on the %s store', (storage) => {
  let system: TestSystem;
  let api: ReturnType<typeof skillsApi>;
  let slug: string;

  beforeAll(async () => {
    system = await startTestSystem({ storage, env: { MAX_PACKAGE_BYTES: String(MAX_PACKAGE_BYTES) } });
    api = skillsApi(system);
    slug = await api.makeSkill();
  });
  afterAll(() => system?.close());

  /** A refused upload stores no version, no blob and no temporary file. */
  async function expectNothingKept(bytes: Buffer): Promise<void> {
    expect((await api.get(slug)).body).toMatchObject({ latest_version: null, versions: [] });
    expect(await api.blobExists(bytes)).toBe(false);
    expect(await api.tempFiles()).toEqual([]);
  }

  it('answers a raw zip body 415, naming the multipart upload it takes', async () => {
    const answer = await http('POST', `${system.controllerUrl}/api/v1/skills/${slug}/upload/`, {
      headers: { authorization: `Token ${system.apiToken}`, 'content-type': 'application/zip' }, body: skillPackage(),
    });
    expect(answer.status).toBe(415);
    expect(answer.body).toMatchObject({ code: 'unsupported_media_type', detail: expect.stringContaining('multipart/form-data') });
  });

  it.each(REFUSED)('refuses %s with 400', async (_label, makeBytes, reason) => {
    const bytes = makeBytes();
    const answer = await api.upload(slug, bytes);
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ code: 'invalid', detail: expect.stringMatching(reason), errors: { file: [expect.stringMatching(reason)] } });
    await expectNothingKept(bytes);
  });

  it('refuses a package over MAX_PACKAGE_BYTES with 413', async () => {
    const bytes = randomPackage(MAX_PACKAGE_BYTES + 10);
    const answer = await api.upload(slug, bytes);
    expect(answer.status).toBe(413);
    expect(answer.body.code).toBe('payload_too_large');
    await expectNothingKept(bytes);
  });

  it('refuses a declared Content-Length over the limit with 413 before reading the body', async () => {
    const answer = await api.declaredUpload(slug, 10 * 1024 * 1024 * 1024);
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.text).code).toBe('payload_too_large');
    expect(await api.tempFiles()).toEqual([]);
  });

  it('refuses a body that is not multipart with 415', async () => {
    const json = await http('POST', `${api.base}/${slug}/upload/`, { json: { file: 'x' }, headers: api.headers });
    expect(json.status).toBe(415);
    expect(json.body.code).toBe('unsupported_media_type');
    const zip = await http('POST', `${api.base}/${slug}/upload/`, {
      body: skillPackage(),
      headers: { ...api.headers, 'content-type': 'application/zip' },
    });
    expect(zip.status).toBe(415);
    const empty = await http('POST', `${api.base}/${slug}/upload/`, { headers: { ...api.headers, 'content-type': 'multipart/form-data; boundary=x' } });
    expect(empty.status).toBe(400);
  });

  it('refuses multipart without a file part named "file" with 400', async () => {
    const form = new FormData();
    form.append('file', 'only a text field');
    const textOnly = await fetch(`${api.base}/${slug}/upload/`, { method: 'POST', body: form, headers: api.headers });
    expect(textOnly.status).toBe(400);
    expect(((await textOnly.json()) as { errors: object }).errors).toHaveProperty('file');
    const misnamed = await api.upload(slug, skillPackage(), { field: 'package' });
    expect(misnamed.status).toBe(400);
    expect(misnamed.body.errors).toHaveProperty('file');
    const twoFiles = new FormData();
    twoFiles.append('file', new Blob([skillPackage()]), 'a.zip');
    twoFiles.append('file', new Blob([randomPackage()]), 'b.zip');
    expect((await fetch(`${api.base}/${slug}/upload/`, { method: 'POST', body: twoFiles, headers: api.headers })).status).toBe(400);
    await expectNothingKept(skillPackage());
  });

  it('refuses an upload to an unknown skill with 404, keeping nothing', async () => {
    const bytes = randomPackage();
    const answer = await api.upload(`missing-${randomBytes(3).toString('hex')}`, bytes);
    expect(answer.status).toBe(404);
    expect(answer.body.code).toBe('not_found');
    expect(await api.blobExists(bytes)).toBe(false);
    expect(await api.tempFiles()).toEqual([]);
  });

  it('still numbers the first accepted package 1 after all the refusals', async () => {
    const bytes = skillPackage();
    const answer = await api.upload(slug, bytes);
    expect(answer.status).toBe(201);
    expect(answer.body).toMatchObject({ version_number: 1, content_hash: sha256(bytes) });
  });
});
