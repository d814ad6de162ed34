import { existsSync } from 'node:fs';
import * as path from 'node:path';

/** The folder holding package.json above this file (from src/ under Jest or dist/src/ when built). */
export function findProjectRoot(start = __dirname): string {
  let dir = start;
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) return process.cwd();
    dir = parent;
  }
  return dir;
}
