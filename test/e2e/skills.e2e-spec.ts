import * as fs from 'node:fs';
import * as path from 'node:path';
import { DataSource } from 'typeorm';
import { SkillsService } from '../../src/controller/skills/skills.service';
import { DomainError } from '../../src/shared/errors/domain-error';
import { http } from '../harness/http';
import { randomPackage, sha256, skillsApi } from '../harness/skills';
import { startTestSystem, TestSystem } from '../harness/system';

describe('skills registry: create, list, show', () => {
  let system: TestSystem;
  let api: ReturnType<typeof skillsApi>;

  beforeAll(async () => {
    system = await startTestSystem();
    api = skillsApi(system);
  });
  afterAll(() => system?.close());

  it('creates a skill with a slug made from its name', async () => {
    const answer = await api.create({ name: '  Code Review: Über PRs! ', category: 'workflow', description: 'Reviews pull requests.' });
    expect(answer.status).toBe(201);
    expect(answer.body).toEqual({
      guid: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/),
      name: 'Code Review: Über PRs!',
      slug: 'code-review-uber-prs',
      category: 'workflow',
      description: 'Reviews pull requests.',
      created_at: expect.stringMatching(/Z$/),
      updated_at: expect.stringMatching(/Z$/),
      latest_version: null,
    });
  });

  it('answers 409 when the slug is taken', async () => {
    await api.create({ name: 'Linter', category: 'tool', description: '' });
    const answer = await api.create({ name: 'LINTER', category: 'prompt', description: 'other' });
    expect(answer.status).toBe(409);
    expect(answer.body.code).toBe('conflict');
  });

  it.each([
    ['no name', { category: 'tool' }, 'name'],
    ['a blank name', { name: '   ', category: 'tool' }, 'name'],
    ['a name with no letter or digit', { name: '***', category: 'tool' }, 'name'],
    ['a name over 100 characters', { name: 'x'.repeat(101), category: 'tool' }, 'name'],
    ['an unknown category', { name: 'Bad category', category: 'weapon' }, 'category'],
    ['a description over 2000 characters', { name: 'Long description', description: 'd'.repeat(2001) }, 'description'],
  ])('refuses %s, naming the field', async (_label, body, field) => {
    const answer = await api.create(body);
    expect(answer.status).toBe(400);
    expect(answer.body.code).toBe('invalid');
    expect(Object.keys(answer.body.errors)).toContain(field);
  });

  it('defaults the category to other and the description to empty', async () => {
    const answer = await api.create({ name: 'Minimal' });
    expect(answer.body).toMatchObject({ slug: 'minimal', category: 'other', description: '' });
  });

  it('lists skills as a JSON array, filtered by category and search', async () => {
    await api.create({ name: 'Search Target', category: 'knowledge', description: 'Finds the needle in docs.' });
    const all = await http('GET', `${api.base}/`, { headers: api.headers });
    expect(all.status).toBe(200);
    expect(Array.isArray(all.body)).toBe(true);
    expect(all.body.map((skill: { slug: string }) => skill.slug)).toEqual(expect.arrayContaining(['linter', 'search-target']));
    const byCategory = await http('GET', `${api.base}/?category=knowledge`, { headers: api.headers });
    expect(byCategory.body.map((skill: { slug: string }) => skill.slug)).toEqual(['search-target']);
    const bySearch = await http('GET', `${api.base}?search=NEEDLE`, { headers: api.headers });
    expect(bySearch.body.map((skill: { slug: string }) => skill.slug)).toEqual(['search-target']);
    const wildcard = await http('GET', `${api.base}/?search=%25`, { headers: api.headers });
    expect(wildcard.body).toEqual([]);
    const badCategory = await http('GET', `${api.base}/?category=nope`, { headers: api.headers });
    expect(badCategory.status).toBe(400);
  });

  it('shows one skill with its (empty) versions, and 404 for an unknown slug', async () => {
    const shown = await api.get('linter');
    expect(shown.status).toBe(200);
    expect(shown.body).toMatchObject({ slug: 'linter', name: 'Linter', versions: [] });
    expect((await api.get('no-such-skill')).status).toBe(404);
    expect((await http('GET', `${api.base}/linter`, { headers: api.headers })).status).toBe(200);
  });

  it('needs a credential for every skills endpoint', async () => {
    for (const [method, path] of [['GET', '/'], ['POST', '/'], ['GET', '/linter/'], ['POST', '/linter/upload/'], ['GET', '/linter/download/']]) {
      const answer = await http(method, `${api.base}${path}`);
      expect([method, path, answer.status]).toEqual([method, path, 401]);
    }
    const wrong = await http('GET', `${api.base}/`, { headers: { authorization: 'Token wrong' } });
    expect(wrong.status).toBe(401);
  });

  it('lets an OAuth client with skills:read list and download, but not create or upload', async () => {
    const oauth = `${system.controllerUrl}/api/v1/oauth`;
    const client = await http('POST', `${oauth}/clients/`, { json: { name: 'reader', scopes: ['skills:read'] }, headers: api.headers });
    const token = await http('POST', `${oauth}/token/`, {
      json: { grant_type: 'client_credentials', client_id: client.body.client_id, client_secret: client.body.client_secret },
    });
    const bearer = { authorization: `Bearer ${token.body.access_token}` };
    expect((await http('GET', `${api.base}/`, { headers: bearer })).status).toBe(200);
    expect((await http('GET', `${api.base}/linter/download/`, { headers: bearer })).status).toBe(404);
    const create = await http('POST', `${api.base}/`, { json: { name: 'Scoped' }, headers: bearer });
    expect(create.status).toBe(403);
    expect(create.body.code).toBe('permission_denied');
    expect((await http('POST', `${api.base}/linter/upload/`, { headers: bearer })).status).toBe(403);
  });

  it('keeps version rows immutable in the database itself', async () => {
    const slug = await api.makeSkill();
    await api.upload(slug, randomPackage());
    const database = system.controller!.get(DataSource);
    await expect(database.query(`UPDATE "controller"."skill_versions" SET "size_bytes" = 1`)).rejects.toThrow(/immutable/);
  });

  it('removes temporary package files older than an hour at boot, and keeps recent ones', async () => {
    const folder = path.join(system.config.dataDir, 'tmp');
    fs.mkdirSync(folder, { recursive: true });
    const [old, recent] = [path.join(folder, 'old.zip.partial'), path.join(folder, 'recent.zip.partial')];
    fs.writeFileSync(old, 'left by a crash');
    fs.writeFileSync(recent, 'being received by another replica');
    fs.utimesSync(old, new Date(Date.now() - 2 * 3600_000), new Date(Date.now() - 2 * 3600_000));
    await system.restart();
    expect(fs.readdirSync(folder)).toEqual(['recent.zip.partial']);
    fs.rmSync(recent);
  });

  describe('SkillsService.resolveRef, for tasks that carry skills', () => {
    const resolve = (ref: string) => system.controller!.get(SkillsService).resolveRef(ref);

    it('resolves "slug" to the latest version and "slug@N" to that one', async () => {
      const slug = await api.makeSkill();
      const [v1, v2] = [randomPackage(), randomPackage()];
      await api.upload(slug, v1);
      await api.upload(slug, v2);
      expect(await resolve(slug)).toEqual({ slug, version_number: 2, content_hash: sha256(v2), storage_ref: `skills/sha256/${sha256(v2)}.zip` });
      expect(await resolve(`${slug}@1`)).toMatchObject({ version_number: 1, content_hash: sha256(v1) });
    });

    it.each([
      ['a malformed reference', 'Not A Slug'],
      ['version zero', 'linter@0'],
      ['an unknown skill', 'no-such-skill'],
      ['a skill without packages', 'linter'],
      ['an unknown version', 'linter@9'],
    ])('refuses %s with a 400 naming the reference', async (_label, ref) => {
      const error = await resolve(ref).then(() => null, (e: unknown) => e);
      expect(error).toBeInstanceOf(DomainError);
      expect((error as DomainError).status).toBe(400);
      expect((error as DomainError).message).toContain(`"${ref}"`);
      expect((error as DomainError).options.fields?.skills?.[0]).toContain(ref);
    });
  });
});
