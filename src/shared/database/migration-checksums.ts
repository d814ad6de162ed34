import { DataSource } from 'typeorm';

/** The migrations whose recorded checksum differs from the one this build carries. */
export class MigrationChecksumError extends Error {
  constructor(readonly schema: string, readonly files: string[]) {
    super(
      `Schema "${schema}": applied migration${files.length > 1 ? 's' : ''} ${files.join(', ')} changed after ` +
        'being applied (recorded checksum differs from the file\'s). A database migrated before the edit keeps the ' +
        'old schema: restore the file and add a new migration. The server does not start.',
    );
    this.name = 'MigrationChecksumError';
  }
}

/** TypeORM names a migration by its class, `CreateAuth1720000000000`; its file is `1720000000000-CreateAuth.ts`. */
export function migrationFile(className: string): string {
  const match = /^(.*?)(\d{13})$/.exec(className);
  if (!match) throw new Error(`Migration class ${className} does not end with its 13-digit timestamp`);
  return `${match[2]}-${match[1]}.ts`;
}

/**
 * Like Flyway's validation: each applied migration's checksum is recorded beside TypeORM's
 * `migrations` table, filled on the first boot that finds none, and compared on every boot.
 * Runs under the migration lock, before pending migrations are applied.
 */
export class MigrationChecksums {
  constructor(private readonly source: DataSource, private readonly schema: string, private readonly committed: Record<string, string>) {}

  private get table(): string {
    return `"${this.schema}"."migration_checksums"`;
  }

  /** Every migration this build would run has a committed checksum, or the build is refused. */
  requireListed(classNames: string[]): void {
    const unlisted = classNames.map(migrationFile).filter((file) => !this.committed[file]);
    if (unlisted.length) {
      throw new Error(`Schema "${this.schema}": ${unlisted.join(', ')} ha${unlisted.length > 1 ? 've' : 's'} no line in checksums.ts: run node scripts/migration-checksums.mjs --write`);
    }
  }

  async verifyApplied(): Promise<void> {
    await this.source.query(
      `CREATE TABLE IF NOT EXISTS ${this.table} (file varchar PRIMARY KEY, sha256 char(64) NOT NULL, recorded_at timestamptz NOT NULL DEFAULT now())`,
    );
    const [{ exists }] = await this.source.query(`SELECT to_regclass($1) IS NOT NULL AS exists`, [`"${this.schema}"."migrations"`]);
    const applied: { name: string }[] = exists ? await this.source.query(`SELECT name FROM "${this.schema}"."migrations" ORDER BY id`) : [];
    const recorded = new Map<string, string>(
      (await this.source.query(`SELECT file, sha256 FROM ${this.table}`)).map((row: { file: string; sha256: string }) => [row.file, row.sha256]),
    );
    const changed: string[] = [];
    const unrecorded: string[] = [];
    for (const { name } of applied) {
      const file = migrationFile(name);
      // A migration this build does not know (a newer build migrated the database) has nothing to compare with.
      if (!this.committed[file]) continue;
      if (!recorded.has(file)) unrecorded.push(file);
      else if (recorded.get(file) !== this.committed[file]) changed.push(file);
    }
    if (changed.length) throw new MigrationChecksumError(this.schema, changed);
    await this.record(unrecorded, 'DO NOTHING');
  }

  /** A migration just applied from this build's file: its checksum replaces one left by an earlier revert. */
  async recordApplied(classNames: string[]): Promise<void> {
    await this.record(classNames.map(migrationFile), 'DO UPDATE SET sha256 = EXCLUDED.sha256, recorded_at = now()');
  }

  private async record(files: string[], onConflict: string): Promise<void> {
    for (const file of files) {
      await this.source.query(`INSERT INTO ${this.table} (file, sha256) VALUES ($1, $2) ON CONFLICT (file) ${onConflict}`, [file, this.committed[file]]);
    }
  }
}
