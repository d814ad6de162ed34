import { parse } from 'yaml';

/** What a package's SKILL.md says about itself, from its YAML front matter. */
export interface SkillManifest {
  name?: string;
  description?: string;
}

const FRONT_MATTER = /^\uFEFF?---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/;
const LIMITS: Record<keyof SkillManifest, number> = { name: 200, description: 2000 };

/**
 * Reads `name` and `description` from a `---` fenced front matter block. Front matter a
 * YAML parser refuses is no manifest at all: the package is still accepted, as one without
 * a SKILL.md header would be.
 */
export function parseFrontMatter(text: string): SkillManifest | null {
  const block = FRONT_MATTER.exec(text);
  if (!block) return null;
  const document = readYaml(block[1]);
  if (!document) return null;
  const manifest: SkillManifest = {};
  for (const key of Object.keys(LIMITS) as Array<keyof SkillManifest>) {
    const value = scalar(document[key]);
    if (value) manifest[key] = value.slice(0, LIMITS[key]);
  }
  return manifest.name !== undefined || manifest.description !== undefined ? manifest : null;
}

function readYaml(source: string): Record<string, unknown> | null {
  try {
    // Aliases are capped so a small header cannot expand into a large document.
    const document: unknown = parse(source, { maxAliasCount: 10, uniqueKeys: false });
    return document && typeof document === 'object' && !Array.isArray(document) ? (document as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** Strings, numbers and booleans read as text; lists and maps are not a name or a description. */
function scalar(value: unknown): string {
  if (typeof value === 'string') return value.trim();
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return '';
}
