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
