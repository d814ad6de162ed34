import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform, Type } from 'class-transformer';
import { IsIn, IsInt, IsNotEmpty, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import { Skill, SKILL_CATEGORIES, SkillCategory, SkillVersion } from './skills.entity';

const trimmed = ({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value);

export class CreateSkillDto {
  @ApiProperty({ maxLength: 100, example: 'Code Review' })
  @Transform(trimmed)
  @IsString()
  @IsNotEmpty()
  @MaxLength(100)
  name: string;

  @ApiPropertyOptional({ enum: SKILL_CATEGORIES, default: 'other' })
  @IsOptional()
  @IsIn(SKILL_CATEGORIES)
  category?: SkillCategory;

  @ApiPropertyOptional({ maxLength: 2000, default: '' })
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  description?: string;
}

export class ListSkillsQuery {
  @ApiPropertyOptional({ enum: SKILL_CATEGORIES })
  @IsOptional()
  @IsIn(SKILL_CATEGORIES)
  category?: SkillCategory;

  @ApiPropertyOptional({ description: 'Matched against name, slug and description, case-insensitively.' })
  @IsOptional()
  @IsString()
  @MaxLength(100)
  search?: string;
}

export class DownloadQuery {
  @ApiPropertyOptional({ description: 'Version number; the latest when omitted.' })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(2147483647)
  version?: number;
}

export interface SkillView {
  guid: string;
  name: string;
  slug: string;
  category: SkillCategory;
  description: string;
  created_at: string;
  updated_at: string;
  latest_version: number | null;
}

export interface SkillVersionView {
  version_number: number;
  content_hash: string;
  size_bytes: number;
  created_at: string;
  name?: string;
  description?: string;
}

export interface UploadResultView {
  slug: string;
  storage_ref: string;
  content_hash: string;
  version_number: number;
  size_bytes: number;
  deduplicated: boolean;
}

/** `resolveRef`'s answer: one exact package version, for tasks that carry skills. */
export interface ResolvedSkillRef {
  slug: string;
  version_number: number;
  content_hash: string;
  storage_ref: string;
}

export function skillView(skill: Skill): SkillView {
  return {
    guid: skill.guid,
    name: skill.name,
    slug: skill.slug,
    category: skill.category,
    description: skill.description,
    created_at: skill.createdAt.toISOString(),
    updated_at: skill.updatedAt.toISOString(),
    latest_version: skill.latestVersion,
  };
}

export function versionView(version: SkillVersion): SkillVersionView {
  return {
    version_number: version.versionNumber,
    content_hash: version.contentHash,
    size_bytes: version.sizeBytes,
    created_at: version.createdAt.toISOString(),
    ...(version.manifestName !== null ? { name: version.manifestName } : {}),
    ...(version.manifestDescription !== null ? { description: version.manifestDescription } : {}),
  };
}

export function uploadResultView(skill: Skill, version: SkillVersion, deduplicated: boolean): UploadResultView {
  return {
    slug: skill.slug,
    storage_ref: version.storageRef,
    content_hash: version.contentHash,
    version_number: version.versionNumber,
    size_bytes: version.sizeBytes,
    deduplicated,
  };
}
