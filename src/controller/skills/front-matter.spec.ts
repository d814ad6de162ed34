import { parseFrontMatter } from './front-matter';

describe('parseFrontMatter', () => {
  it('reads plain, quoted and block values', () => {
    expect(parseFrontMatter('---\nname: Code review\ndescription: "Reviews \\"diffs\\""\n---\nbody')).toEqual({
      name: 'Code review',
      description: 'Reviews "diffs"',
    });
    expect(parseFrontMatter("---\nname: 'It''s'\ndescription: >\n  folded\n  lines\nother: x\n---\n")).toEqual({
      name: "It's",
      description: 'folded lines',
    });
    expect(parseFrontMatter('---\ndescription: |\n  one\n  two\n---\n')).toEqual({ description: 'one\ntwo' });
  });

  it('ignores comments, other keys and nested keys', () => {
    expect(parseFrontMatter('---\nname: tool # the name\nmeta:\n  name: nested\n---\n')).toEqual({ name: 'tool' });
  });

  it('is null without a front matter block or without the two keys', () => {
    expect(parseFrontMatter('# Title\nname: x\n')).toBeNull();
    expect(parseFrontMatter('---\nversion: 2\n---\n')).toBeNull();
    expect(parseFrontMatter('---\nname: never closed\n')).toBeNull();
  });

  it('bounds the lengths it keeps', () => {
    const manifest = parseFrontMatter(`---\nname: ${'n'.repeat(500)}\ndescription: ${'d'.repeat(5000)}\n---\n`);
    expect(manifest?.name).toHaveLength(200);
    expect(manifest?.description).toHaveLength(2000);
  });
});

describe('parseFrontMatter with YAML the hand-read forms missed', () => {
  it('reads flow maps, escapes, and keys in any order', () => {
    expect(parseFrontMatter('---\n{name: flow, description: "tab\\there"}\n---\n')).toEqual({ name: 'flow', description: 'tab\there' });
    expect(parseFrontMatter('---\ndescription: >-\n  a\n\n  b\nname: last\n---\n')).toEqual({ name: 'last', description: 'a\nb' });
  });

  it('takes numbers as text and ignores lists and maps under the two keys', () => {
    expect(parseFrontMatter('---\nname: 42\ndescription: [a, b]\n---\n')).toEqual({ name: '42' });
  });

  it('is null for front matter that is not YAML, and for a header that only aliases itself', () => {
    expect(parseFrontMatter('---\nname: "unclosed\n  : [\n---\n')).toBeNull();
    expect(parseFrontMatter('---\n- a list\n---\n')).toBeNull();
    const bomb = ['a: &a [x, x, x, x, x, x, x, x, x, x]', ...Array.from({ length: 12 }, (_, i) => `${'b'.repeat(i + 1)}: &b${i} [*a, *a, *a, *a]`), 'name: fine'];
    expect(parseFrontMatter(`---\n${bomb.join('\n')}\n---\n`)).toBeNull();
  });
});
