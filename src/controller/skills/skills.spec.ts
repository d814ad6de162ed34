import { etagMatches, skillSlug } from './skills.service';

describe('skillSlug', () => {
  it.each([
    ['Code Review', 'code-review'],
    ['  Über  Café -- Tools!! ', 'uber-cafe-tools'],
    ['snake_case_name', 'snake-case-name'],
    ['v2.0 (beta)', 'v2-0-beta'],
    ['***', ''],
    ['日本語', ''],
  ])('makes %j into %j', (name, slug) => {
    expect(skillSlug(name)).toBe(slug);
  });

  it('stays within 100 characters and never ends in a dash', () => {
    const slug = skillSlug(`${'a'.repeat(99)} b`);
    expect(slug).toBe('a'.repeat(99));
    expect(skillSlug('x'.repeat(150))).toHaveLength(100);
  });
});

describe('etagMatches', () => {
  const hash = 'ab'.repeat(32);

  it.each([
    [`"${hash}"`, true],
    [`W/"${hash}"`, true],
    [`"other", "${hash}"`, true],
    ['*', true],
    [hash, false],
    ['"other"', false],
    ['', false],
    [undefined, false],
  ])('If-None-Match %j matches: %s', (header, expected) => {
    expect(etagMatches(header, hash)).toBe(expected);
  });
});
