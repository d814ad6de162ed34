import { randomPackage, sha256, skillsApi } from '../harness/skills';
import { startTestSystem, TestSystem } from '../harness/system';
import { skillPackage } from '../harness/zip-builder';

describe.each(['folder', 's3'] as const)('skill packages on the %s store', (storage) => {
  let system: TestSystem;
  let api: ReturnType<typeof skillsApi>;

  beforeAll(async () => {
    system = await startTestSystem({ storage });
    api = skillsApi(system);
  });
  afterAll(() => system?.close());

  it('stores a first upload as version 1, with the SKILL.md front matter in the version list', async () => {
    const slug = await api.makeSkill();
    const bytes = skillPackage({ name: 'Reviewer', description: 'Reviews diffs.' });
    const answer = await api.upload(slug, bytes);
    expect(answer.status).toBe(201);
    expect(answer.body).toEqual({
      slug,
      storage_ref: `skills/sha256/${sha256(bytes)}.zip`,
      content_hash: sha256(bytes),
      version_number: 1,
      size_bytes: bytes.length,
      deduplicated: false,
    });
    const shown = await api.get(slug);
    expect(shown.body.latest_version).toBe(1);
    expect(shown.body.versions).toEqual([
      { version_number: 1, content_hash: sha256(bytes), size_bytes: bytes.length, created_at: expect.any(String), name: 'Reviewer', description: 'Reviews diffs.' },
    ]);
    expect(await api.blobExists(bytes)).toBe(true);
  });

  it('answers 200 deduplicated for the same bytes, and 201 with the next number for new ones', async () => {
    const slug = await api.makeSkill();
    const first = randomPackage();
    await api.upload(slug, first);
    const again = await api.upload(slug, first);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ version_number: 1, deduplicated: true, content_hash: sha256(first) });
    const second = await api.upload(slug, randomPackage());
    expect(second.status).toBe(201);
    expect(second.body).toMatchObject({ version_number: 2, deduplicated: false });
    expect((await api.get(slug)).body.versions.map((v: { version_number: number }) => v.version_number)).toEqual([1, 2]);
  });

  it('stores equal bytes once across skills', async () => {
    const bytes = randomPackage();
    const [one, two] = [await api.makeSkill(), await api.makeSkill()];
    const a = await api.upload(one, bytes);
    const b = await api.upload(two, bytes);
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(b.body.storage_ref).toBe(a.body.storage_ref);
    expect(b.body).toMatchObject({ version_number: 1, deduplicated: false });
  });

  it('downloads the latest or a given version, with headers that match the served bytes', async () => {
    const slug = await api.makeSkill();
    const [v1, v2] = [randomPackage(200_000), randomPackage(300_000)];
    await api.upload(slug, v1);
    await api.upload(slug, v2);
    for (const [version, bytes, number] of [[undefined, v2, 2], [1, v1, 1]] as const) {
      const download = await api.download(slug, { version });
      expect(download.status).toBe(200);
      expect(download.bytes.equals(bytes)).toBe(true);
      expect(download.headers.get('x-content-hash')).toBe(sha256(download.bytes));
      expect(download.headers.get('etag')).toBe(`"${sha256(download.bytes)}"`);
      expect(download.headers.get('content-type')).toBe('application/zip');
      expect(download.headers.get('content-length')).toBe(String(bytes.length));
      expect(download.headers.get('content-disposition')).toBe(`attachment; filename="${slug}-${number}.zip"`);
    }
  });

  it('answers 304 to If-None-Match with the ETag, and 404 for an unknown version', async () => {
    const slug = await api.makeSkill();
    const bytes = randomPackage();
    await api.upload(slug, bytes);
    const etag = `"${sha256(bytes)}"`;
    const cached = await api.download(slug, { ifNoneMatch: etag });
    expect(cached.status).toBe(304);
    expect(cached.bytes.length).toBe(0);
    expect(cached.headers.get('etag')).toBe(etag);
    expect((await api.download(slug, { ifNoneMatch: `"other", W/${etag}` })).status).toBe(304);
    expect((await api.download(slug, { ifNoneMatch: '"other"' })).status).toBe(200);
    expect((await api.download(slug, { version: 7 })).status).toBe(404);
    expect((await api.download(slug, { version: 'x' })).status).toBe(400);
    expect((await api.download(slug, { version: 99_999_999_999 })).status).toBe(400);
    expect((await api.download(await api.makeSkill())).status).toBe(404);
    expect((await api.download('no-such-skill')).status).toBe(404);
  });

  it('gives concurrent uploads to one skill distinct version numbers', async () => {
    const slug = await api.makeSkill();
    const answers = await Promise.all(Array.from({ length: 5 }, () => api.upload(slug, randomPackage())));
    expect(answers.map((answer) => answer.status)).toEqual([201, 201, 201, 201, 201]);
    expect(answers.map((answer) => answer.body.version_number).sort()).toEqual([1, 2, 3, 4, 5]);
    const same = randomPackage();
    const twins = await Promise.all([api.upload(slug, same), api.upload(slug, same)]);
    expect(twins.map((answer) => answer.status).sort()).toEqual([200, 201]);
    expect(twins[0].body.version_number).toBe(twins[1].body.version_number);
  });

  it('keeps nothing of an upload the client aborts half-way', async () => {
    const slug = await api.makeSkill();
    const bytes = randomPackage(3 * 1024 * 1024);
    expect(await api.abortedUpload(slug, bytes)).toEqual({ serverWasWriting: true });
    expect(await api.tempFiles()).toEqual([]);
    expect((await api.get(slug)).body).toMatchObject({ latest_version: null, versions: [] });
    expect(await api.blobExists(bytes)).toBe(false);
    const retried = await api.upload(slug, bytes);
    expect(retried.body).toMatchObject({ version_number: 1, deduplicated: false });
    expect(await api.tempFiles()).toEqual([]);
  });
});
