/** What a package's SKILL.md says about itself, from its YAML front matter. */
export interface SkillManifest {
  name?: string;
  description?: string;
}

const FRONT_MATTER = /^\uFEFF?---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/;
const KEY_LINE = /^(name|description)[ \t]*:(.*)$/;
const LIMITS: Record<keyof SkillManifest, number> = { name: 200, description: 2000 };

/**
 * Reads `name` and `description` from a `---` fenced front matter block. Only these two
 * top-level scalars are needed, so this reads the YAML forms they come in (plain, quoted,
 * `|` and `>` blocks) rather than pulling in a YAML parser.
 */
export function parseFrontMatter(text: string): SkillManifest | null {
  const block = FRONT_MATTER.exec(text);
  if (!block) return null;
  const lines = block[1].split(/\r?\n/);
  const manifest: SkillManifest = {};
  for (let index = 0; index < lines.length; index++) {
    const match = KEY_LINE.exec(lines[index]);
    if (!match) continue;
    const key = match[1] as keyof SkillManifest;
    const inline = match[2].trim();
    let value: string;
    if (inline === '' || /^[|>][+-]?$/.test(inline)) {
      const continuation: string[] = [];
      while (index + 1 < lines.length && (/^[ \t]+\S/.test(lines[index + 1]) || lines[index + 1].trim() === '')) {
        continuation.push(lines[++index].trim());
      }
      value = continuation.join(inline.startsWith('|') ? '\n' : ' ').trim();
    } else {
      value = scalar(inline);
    }
    if (value) manifest[key] = value.slice(0, LIMITS[key]);
  }
  return manifest.name !== undefined || manifest.description !== undefined ? manifest : null;
}

function scalar(text: string): string {
  if (text.startsWith('"')) {
    try {
      return String(JSON.parse(text.slice(0, text.lastIndexOf('"') + 1)));
    } catch {
      return text.slice(1).replace(/"$/, '');
    }
  }
  if (text.startsWith("'")) return text.slice(1, text.lastIndexOf("'") > 0 ? text.lastIndexOf("'") : undefined).replace(/''/g, "'");
  return text.replace(/\s+#.*$/, '').trim();
}
