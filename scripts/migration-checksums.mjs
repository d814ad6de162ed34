#!/usr/bin/env node
// A committed migration never changes: a database migrated before the edit would keep the old
// schema silently. Each role's `src/<role>/migrations/checksums.ts` lists the SHA-256 of every
// migration file's source text, one line each; the server compares the recorded checksums of
// applied migrations with it at boot (src/shared/database/migration-checksums.ts).
//
//   node scripts/migration-checksums.mjs          check: exit 1 naming each edited, unlisted or removed file
//   node scripts/migration-checksums.mjs --write  append a line for each new migration; refuse when one changed
//   --root <dir>                                  the repository to look at (default: this one)
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROLES = ['controller', 'dispatcher'];
const MIGRATION_FILE = /^\d{13}-[A-Za-z0-9]+\.ts$/;
const LINE = /^\s*'([^']+)': '([0-9a-f]{64})',\s*$/;
const HEADER = `/**
 * SHA-256 of each migration file's source text, as it landed. A line is never edited: change a
 * schema with a new migration. \`node scripts/migration-checksums.mjs --write\` appends the line of a
 * new file and refuses a changed one; CI runs the same script without \`--write\`.
 */
export const MIGRATION_CHECKSUMS: Record<string, string> = {
`;

export function sha256(text) {
  return createHash('sha256').update(text).digest('hex');
}

/** What the committed list says, and what the files are now, for one role. */
export function compareRole(root, role) {
  const dir = path.join(root, 'src', role, 'migrations');
  const listPath = path.join(dir, 'checksums.ts');
  const listed = new Map();
  if (fs.existsSync(listPath)) {
    for (const line of fs.readFileSync(listPath, 'utf8').split('\n')) {
      const match = LINE.exec(line);
      if (match) listed.set(match[1], match[2]);
    }
  }
  const files = fs.readdirSync(dir).filter((name) => MIGRATION_FILE.test(name)).sort();
  const actual = new Map(files.map((name) => [name, sha256(fs.readFileSync(path.join(dir, name)))]));
  const changed = files.filter((name) => listed.has(name) && listed.get(name) !== actual.get(name));
  const added = files.filter((name) => !listed.has(name));
  const removed = [...listed.keys()].filter((name) => !actual.has(name));
  return { dir, listPath, listed, actual, changed, added, removed };
}

function writeList(state) {
  const names = [...state.listed.keys(), ...state.added];
  const lines = names.map((name) => `  '${name}': '${state.listed.get(name) ?? state.actual.get(name)}',`);
  fs.writeFileSync(state.listPath, `${HEADER}${lines.join('\n')}\n};\n`);
}

export function run(argv) {
  const write = argv.includes('--write');
  const rootAt = argv.indexOf('--root');
  const root = rootAt >= 0 ? path.resolve(argv[rootAt + 1]) : path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  let failed = false;
  for (const role of ROLES) {
    const state = compareRole(root, role);
    const where = path.relative(root, state.dir);
    for (const name of state.changed) {
      console.error(`${where}/${name} changed after it landed (listed ${state.listed.get(name).slice(0, 12)}…, now ${state.actual.get(name).slice(0, 12)}…): restore it and add a new migration instead`);
    }
    for (const name of state.removed) console.error(`${where}/${name} is listed in checksums.ts but no longer exists: a landed migration is never removed`);
    if (state.changed.length || state.removed.length) {
      failed = true;
      continue;
    }
    if (!state.added.length) continue;
    if (write) {
      writeList(state);
      for (const name of state.added) console.log(`${where}/checksums.ts: added ${name}`);
    } else {
      failed = true;
      for (const name of state.added) console.error(`${where}/${name} has no line in checksums.ts: run node scripts/migration-checksums.mjs --write`);
    }
  }
  if (!failed) console.log('migration checksums: every migration file matches its committed line');
  return failed ? 1 : 0;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = run(process.argv.slice(2));
}
