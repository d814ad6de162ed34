import { createHash } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import * as path from 'node:path';
import type { AgentClient } from './agent-client.js';
import { DEFAULT_UNZIP_LIMITS, unzipSafely, UnzipLimits } from './safe-unzip.js';

/** A skill version pinned on the task, as check-in announces it. */
export interface SkillRef {
  slug: string;
  version_number: number;
  content_hash: string;
  storage_ref: string;
}

/** A skill unpacked and ready: its folder and what its SKILL.md front matter says. */
export interface InstalledSkill extends SkillRef {
  dir: string;
  /** SKILL.md's YAML front matter; null when the package has no SKILL.md or no front matter. */
  manifest: Record<string, unknown> | null;
}

export interface InstallSkillsOptions {
  /** The skills to install; default: those the dispatcher announces at check-in. */
  skills?: SkillRef[];
  limits?: UnzipLimits;
}

/** A package whose bytes are not the ones pinned on the task: never unpacked. */
export class SkillIntegrityError extends Error {
  constructor(skill: SkillRef, actual: string) {
    super(`Skill ${skill.slug}@${skill.version_number} (${skill.storage_ref}) has SHA-256 ${actual}, not the pinned ${skill.content_hash}; the package is refused.`);
    this.name = 'SkillIntegrityError';
  }
}

const FRONT_MATTER = /^\uFEFF?---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/;

/**
 * Downloads each skill package pinned on the task through the dispatcher, checks its SHA-256
 * against the pinned `content_hash`, and unpacks it safely into `<dir>/<slug>`. A package
 * that fails either check is refused with an error naming the skill, and nothing of it stays.
 */
export async function installSkills(agent: AgentClient, dir: string, options: InstallSkillsOptions = {}): Promise<InstalledSkill[]> {
  const skills = options.skills ?? (await agent.checkin()).skills;
  const installed: InstalledSkill[] = [];
  for (const skill of skills) installed.push(await installSkill(agent, dir, skill, options.limits ?? DEFAULT_UNZIP_LIMITS));
  return installed;
}

async function installSkill(agent: AgentClient, dir: string, skill: SkillRef, limits: UnzipLimits): Promise<InstalledSkill> {
  const archive = await agent.readObject(skill.storage_ref);
  const actual = createHash('sha256').update(archive).digest('hex');
  if (actual !== skill.content_hash.toLowerCase()) throw new SkillIntegrityError(skill, actual);
  const folder = path.resolve(dir, skillFolderName(skill.slug));
  await rm(folder, { recursive: true, force: true });
  try {
    await unzipSafely(archive, folder, limits);
  } catch (error) {
    await rm(folder, { recursive: true, force: true });
    throw new Error(`Skill ${skill.slug}@${skill.version_number} was refused: ${(error as Error).message}`, { cause: error });
  }
  return { ...skill, dir: folder, manifest: await readManifest(folder) };
}

/** The slug as a plain folder name (slugs are `a-z0-9-`; anything else is not trusted here). */
function skillFolderName(slug: string): string {
  if (!/^[a-z0-9][a-z0-9-]*$/.test(slug)) throw new Error(`Skill slug "${slug}" is not a valid slug.`);
  return slug;
}

/** SKILL.md's front matter parsed as YAML; a mapping is kept, anything else is null. */
export async function readManifest(folder: string): Promise<Record<string, unknown> | null> {
  const text = await readFile(path.join(folder, 'SKILL.md'), 'utf8').catch(() => null);
  const block = text === null ? null : FRONT_MATTER.exec(text);
  if (!block) return null;
  try {
    // Loaded here, not with the client: an agent without skills never pays for a YAML parser at its start.
    const { parse } = await import('yaml');
    const parsed: unknown = parse(block[1]);
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
