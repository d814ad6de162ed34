import { Check, Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn, Unique, UpdateDateColumn } from 'typeorm';

export const SKILL_CATEGORIES = ['tool', 'prompt', 'knowledge', 'workflow', 'integration', 'other'] as const;
export type SkillCategory = (typeof SKILL_CATEGORIES)[number];

/** `bigint` comes back from `pg` as a string; package sizes fit a JS number. */
const bigintAsNumber = { to: (value: number) => value, from: (value: string | null) => (value === null ? null : Number(value)) };

/** A named unit agents can be given, with versioned zip packages. */
@Entity({ name: 'skills' })
@Unique('skills_slug_key', ['slug'])
@Check('skills_category_check', `"category" IN (${SKILL_CATEGORIES.map((category) => `'${category}'`).join(', ')})`)
export class Skill {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'skills_pkey' })
  guid: string;

  @Column({ type: 'varchar', length: 100 })
  name: string;

  @Column({ type: 'varchar', length: 100 })
  slug: string;

  @Column({ type: 'varchar', length: 20 })
  category: SkillCategory;

  @Column({ type: 'text', default: '' })
  description: string;

  /** Number of the newest version, null before the first upload. Advanced under a row lock. */
  @Column({ name: 'latest_version', type: 'integer', nullable: true })
  latestVersion: number | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}

/** One immutable package of a skill, stored content-addressed at `storageRef`. */
@Entity({ name: 'skill_versions' })
@Unique('skill_versions_number_key', ['skillGuid', 'versionNumber'])
@Unique('skill_versions_hash_key', ['skillGuid', 'contentHash'])
@Check('skill_versions_version_number_check', '"version_number" >= 1')
@Check('skill_versions_size_bytes_check', '"size_bytes" >= 0')
@Index('skill_versions_content_hash_idx', ['contentHash'])
export class SkillVersion {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'skill_versions_pkey' })
  guid: string;

  @Column({ name: 'skill_guid', type: 'uuid' })
  skillGuid: string;

  @ManyToOne(() => Skill, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'skill_guid', foreignKeyConstraintName: 'skill_versions_skill_guid_fkey' })
  skill?: Skill;

  @Column({ name: 'version_number', type: 'integer' })
  versionNumber: number;

  /** Lower-case hex SHA-256 of the package bytes. */
  @Column({ name: 'content_hash', type: 'char', length: 64 })
  contentHash: string;

  @Column({ name: 'size_bytes', type: 'bigint', transformer: bigintAsNumber })
  sizeBytes: number;

  @Column({ name: 'storage_ref', type: 'varchar', length: 200 })
  storageRef: string;

  /** `name` from the front matter of the package's root SKILL.md, when it has one. */
  @Column({ name: 'manifest_name', type: 'text', nullable: true })
  manifestName: string | null;

  @Column({ name: 'manifest_description', type: 'text', nullable: true })
  manifestDescription: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
