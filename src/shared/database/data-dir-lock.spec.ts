import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { EmbeddedDatabaseInUseError, lockDataFolder } from './data-dir-lock';

describe('embedded database folder lock', () => {
  let dir: string;
  let lockFile: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lock-'));
    lockFile = path.join(dir, 'pg.lock');
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  const exitedPid = async (): Promise<number> => {
    const child = spawn(process.execPath, ['-e', '0']);
    await new Promise((resolve) => child.once('exit', resolve));
    return child.pid!;
  };

  it('writes this process id and removes the file on release', () => {
    const release = lockDataFolder(lockFile, dir);
    expect(fs.readFileSync(lockFile, 'utf8').trim()).toBe(String(process.pid));
    release();
    expect(fs.existsSync(lockFile)).toBe(false);
  });

  it('refuses a second opening in the same process while the first holds it', () => {
    const release = lockDataFolder(lockFile, dir);
    expect(() => lockDataFolder(lockFile, dir)).toThrow(EmbeddedDatabaseInUseError);
    release();
    lockDataFolder(lockFile, dir)();
  });

  it('refuses while another live Node.js process holds it, naming that process', async () => {
    const holder = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)']);
    try {
      fs.writeFileSync(lockFile, `${holder.pid}\n`);
      const error = (() => {
        try {
          lockDataFolder(lockFile, dir);
        } catch (e) {
          return e as EmbeddedDatabaseInUseError;
        }
        return null;
      })();
      expect(error).toBeInstanceOf(EmbeddedDatabaseInUseError);
      expect(error!.pid).toBe(holder.pid);
      expect(error!.message).toContain(`in use by process ${holder.pid}`);
      expect(error!.message).toContain('DATABASE_URL');
    } finally {
      holder.kill('SIGKILL');
    }
  });

  it('takes over a lock left by a process that is gone', async () => {
    fs.writeFileSync(lockFile, `${await exitedPid()}\n`);
    const release = lockDataFolder(lockFile, dir);
    expect(fs.readFileSync(lockFile, 'utf8').trim()).toBe(String(process.pid));
    release();
  });

  it('takes over a lock with its own pid that it does not hold (a restarted container)', () => {
    fs.writeFileSync(lockFile, `${process.pid}\n`);
    lockDataFolder(lockFile, dir)();
    expect(fs.existsSync(lockFile)).toBe(false);
  });

  it('takes over a lock whose content is garbage', () => {
    fs.writeFileSync(lockFile, 'garbage');
    lockDataFolder(lockFile, dir)();
  });
});
