import * as fs from 'node:fs';

/** The embedded database's files are open in another live process (PGlite has no lock of its own). */
export class EmbeddedDatabaseInUseError extends Error {
  constructor(
    readonly folder: string,
    readonly pid: number,
  ) {
    super(
      `The embedded database in ${folder} is in use by process ${pid} (a running server or CLI command). ` +
        'Embedded PGlite can be opened by one process at a time: stop that process first, ' +
        'or set DATABASE_URL to a PostgreSQL server that both can share.',
    );
  }
}

const held = new Set<string>();

/**
 * An exclusive lock file holding this process's id. A lock left by a process that is gone
 * (crash, SIGKILL) is taken over. Returns the release function.
 */
export function lockDataFolder(lockFile: string, folder: string): () => void {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      fs.writeFileSync(lockFile, `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
      held.add(lockFile);
      return () => release(lockFile);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const pid = Number.parseInt(fs.readFileSync(lockFile, 'utf8'), 10);
    const ours = pid === process.pid && held.has(lockFile);
    if (ours || (pid !== process.pid && isNodeProcess(pid))) throw new EmbeddedDatabaseInUseError(folder, pid);
    fs.rmSync(lockFile, { force: true });
  }
  throw new Error(`Could not take the lock ${lockFile}`);
}

function release(lockFile: string): void {
  if (!held.delete(lockFile)) return;
  try {
    if (Number.parseInt(fs.readFileSync(lockFile, 'utf8'), 10) === process.pid) fs.rmSync(lockFile);
  } catch {
    // already gone
  }
}

/** A live process that is a Node.js process (where /proc tells), so a recycled pid is not mistaken for one. */
function isNodeProcess(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    return /node/i.test(fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8'));
  } catch {
    return true;
  }
}
