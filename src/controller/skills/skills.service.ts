import { Readable } from 'node:stream';
import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { DataSource, QueryFailedError, Repository } from 'typeorm';
import { DomainError } from '../../shared/errors/domain-error';
import { SkillManifest } from './front-matter';
import { inspectPackage } from './package-inspector';
import { ReceivedPackage } from './package-upload';
import { blobKey, SkillBlobs } from './skill-blobs';
import {
  CreateSkillDto, ListSkillsQuery, ResolvedSkillRef, skillView, SkillView, SkillVersionView,
  uploadResultView, UploadResultView, versionView,
} from './skills.dto';
import { Skill, SkillVersion } from './skills.entity';

const SKILL_REF = /^([a-z0-9]+(?:-[a-z0-9]+)*)(?:@([1-9][0-9]{0,8}))?$/;

/** A package ready to send: its version, and its bytes unless the caller's copy is current. */
export interface PackageDownload {
  slug: string;
  version: SkillVersionView;
  notModified: boolean;
  body: Readable | null;
}

/** The slug a name gets: lower-case ASCII letters, digits and single dashes. */
export function skillSlug(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .slice(0, 100)
    .replace(/^-+|-+$/g, '');
}

@Injectable()
export class SkillsService {
  constructor(
    @InjectRepository(Skill) private readonly skills: Repository<Skill>,
    @InjectRepository(SkillVersion) private readonly versions: Repository<SkillVersion>,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly blobs: SkillBlobs,
  ) {}

  async list(query: ListSkillsQuery): Promise<SkillView[]> {
    const select = this.skills.createQueryBuilder('skill').orderBy('skill.slug', 'ASC');
    if (query.category) select.andWhere('skill.category = :category', { category: query.category });
    if (query.search) {
      const pattern = `%${query.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      select.andWhere('(skill.name ILIKE :pattern OR skill.slug ILIKE :pattern OR skill.description ILIKE :pattern)', { pattern });
    }
    return (await select.getMany()).map(skillView);
  }

  async create(input: CreateSkillDto): Promise<SkillView> {
    const slug = skillSlug(input.name);
    if (!slug) throw DomainError.invalid({ name: ['must contain at least one letter or digit (a-z, 0-9)'] });
    if (await this.skills.existsBy({ slug })) throw slugTaken(slug);
    const skill = this.skills.create({ name: input.name, slug, category: input.category ?? 'other', description: input.description ?? '' });
    try {
      return skillView(await this.skills.save(skill));
    } catch (error) {
      if (isUniqueViolation(error)) throw slugTaken(slug);
      throw error;
    }
  }

  async get(slug: string): Promise<SkillView & { versions: SkillVersionView[] }> {
    const skill = await this.findSkill(slug);
    const versions = await this.versions.find({ where: { skillGuid: skill.guid }, order: { versionNumber: 'ASC' } });
    return { ...skillView(skill), versions: versions.map(versionView) };
  }

  /**
   * Records a received package as the skill's next version, or answers the version that
   * already has these bytes. Refused packages store nothing; a blob this call stored is
   * removed again when its version could not be recorded and nothing else uses it.
   */
  async upload(slug: string, received: ReceivedPackage): Promise<UploadResultView> {
    const skill = await this.findSkill(slug);
    const { manifest } = await inspectPackage(received.path);
    const known = await this.versions.findOneBy({ skillGuid: skill.guid, contentHash: received.contentHash });
    if (known) return uploadResultView(skill, known, true);
    const storedNow = await this.blobs.storeOnce(received);
    try {
      const { version, deduplicated } = await this.recordVersion(skill, received, manifest);
      return uploadResultView(skill, version, deduplicated);
    } catch (error) {
      if (storedNow && !(await this.versions.existsBy({ contentHash: received.contentHash }))) {
        await this.blobs.remove(blobKey(received.contentHash));
      }
      throw error;
    }
  }

  async download(slug: string, versionNumber: number | undefined, ifNoneMatch: string | undefined): Promise<PackageDownload> {
    const skill = await this.findSkill(slug);
    const number = versionNumber ?? skill.latestVersion;
    const version = number ? await this.versions.findOneBy({ skillGuid: skill.guid, versionNumber: number }) : null;
    if (!version) throw DomainError.notFound(number ? `Version ${number} of skill "${slug}"` : `A package of skill "${slug}"`);
    const view = versionView(version);
    if (etagMatches(ifNoneMatch, version.contentHash)) return { slug, version: view, notModified: true, body: null };
    const body = await this.blobs.open(version.storageRef);
    if (!body) throw new Error(`Package ${version.storageRef} of skill "${slug}" is missing from object storage`);
    return { slug, version: view, notModified: false, body };
  }

  /**
   * Resolves `slug` (its latest version) or `slug@N` to one stored package. An unknown
   * skill or version is a 400 naming the reference under `field`.
   */
  async resolveRef(ref: string, field = 'skills'): Promise<ResolvedSkillRef> {
    const refuse = (reason: string) => DomainError.invalid({ [field]: [`"${ref}": ${reason}`] }, `Skill reference "${ref}": ${reason}.`);
    const match = SKILL_REF.exec(typeof ref === 'string' ? ref : '');
    if (!match) throw refuse('is not "slug" or "slug@N"');
    const skill = await this.skills.findOneBy({ slug: match[1] });
    if (!skill) throw refuse(`there is no skill "${match[1]}"`);
    const number = match[2] ? Number(match[2]) : skill.latestVersion;
    if (!number) throw refuse(`skill "${skill.slug}" has no uploaded package`);
    const version = await this.versions.findOneBy({ skillGuid: skill.guid, versionNumber: number });
    if (!version) throw refuse(`skill "${skill.slug}" has no version ${number}`);
    return { slug: skill.slug, version_number: number, content_hash: version.contentHash, storage_ref: version.storageRef };
  }

  /** Numbers the version under a lock on the skill's row, so concurrent uploads never share one. */
  private recordVersion(skill: Skill, received: ReceivedPackage, manifest: SkillManifest | null) {
    return this.dataSource.transaction(async (manager) => {
      const locked = await manager.findOne(Skill, { where: { guid: skill.guid }, lock: { mode: 'pessimistic_write' } });
      if (!locked) throw DomainError.notFound(`Skill "${skill.slug}"`);
      const known = await manager.findOneBy(SkillVersion, { skillGuid: skill.guid, contentHash: received.contentHash });
      if (known) return { version: known, deduplicated: true };
      const version = await manager.save(
        manager.create(SkillVersion, {
          skillGuid: skill.guid,
          versionNumber: (locked.latestVersion ?? 0) + 1,
          contentHash: received.contentHash,
          sizeBytes: received.sizeBytes,
          storageRef: blobKey(received.contentHash),
          manifestName: manifest?.name ?? null,
          manifestDescription: manifest?.description ?? null,
        }),
      );
      await manager.update(Skill, { guid: skill.guid }, { latestVersion: version.versionNumber });
      return { version, deduplicated: false };
    });
  }

  private async findSkill(slug: string): Promise<Skill> {
    const skill = await this.skills.findOneBy({ slug });
    if (!skill) throw DomainError.notFound(`Skill "${slug}"`);
    return skill;
  }
}

/** `If-None-Match` holds the package's ETag (or `*`), weak or strong. */
export function etagMatches(header: string | undefined, contentHash: string): boolean {
  if (!header) return false;
  return header.split(',').some((tag) => {
    const value = tag.trim().replace(/^W\//, '');
    return value === '*' || value === `"${contentHash}"`;
  });
}

function slugTaken(slug: string): DomainError {
  return DomainError.conflict(`A skill with slug "${slug}" already exists.`, { slug });
}

function isUniqueViolation(error: unknown): boolean {
  return error instanceof QueryFailedError && (error.driverError as { code?: string })?.code === '23505';
}
