/**
 * The wire between a dispatcher and its process spawner: one JSON object per line over a
 * unix socket. The dispatcher sends requests with an `id`; the spawner answers each with
 * the same `id`, and pushes `exit` events to every connected dispatcher.
 */
import { createHash } from 'node:crypto';
import * as path from 'node:path';
import { tmpdir } from 'node:os';

export interface SpawnRequest {
  op: 'spawn';
  taskId: string;
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  /** A warm pool's agent: run at IDLE_NICE until its `claim`, where the spawner may raise it back. */
  idle?: boolean;
}

/**
 * How much lower a warm pool's idle agent runs than the spawner: to nice 19, the lowest, whose
 * CPU weight is 15 against an agent at work's 1024. A drained pool boots all its replacements at
 * once; at +10 (weight 110) twenty of them took half a core from the agents at work and doubled
 * the warm start on two cores.
 */
export const IDLE_NICE = 19;

export type SpawnerRequest =
  | SpawnRequest
  /**
   * SIGTERM, then SIGKILL after the grace, done by the spawner so a stop survives its dispatcher.
   * Only the agent of `pid` when one is given. `agents` answers as `get` does, read before the
   * signal: the agent running, already ended, or unknown here (a spawner of an older build
   * answers no `agents`).
   */
  | { op: 'stop'; taskId: string; pid?: number }
  | { op: 'list' }
  /** The one agent of a task, when this spawner knows it: `agents` holds it or is empty. */
  | { op: 'get'; taskId: string }
  /**
   * Drops an ended agent's record and its exit file (also the file of an agent this spawner never
   * knew, written by one before it): its task is final and its output stored. A running agent's are kept.
   */
  | { op: 'forget'; taskId: string }
  /** A warm pool's agent has its task: it runs at the spawner's own priority again. */
  | { op: 'claim'; taskId: string };

export interface SpawnedAgent {
  taskId: string;
  pid: number;
  /** Set once the process has ended (128 + signal number when a signal ended it). */
  exitCode?: number;
  /** The signal that ended it, if one did. */
  signal?: string;
  /** Why the spawner itself stopped it (its dispatcher was gone for the orphan window). */
  reason?: string;
}

export type SpawnerAnswer = { id: number; ok: true; pid?: number; agents?: SpawnedAgent[] } | { id: number; ok: false; error: string };
export interface SpawnerExitEvent { event: 'exit'; agent: SpawnedAgent }

/** How much of an agent's output is kept: the last MiB, as the logs endpoint serves it. */
export const OUTPUT_LIMIT = 1024 * 1024;

/** Longest path a unix socket takes on Linux (sun_path is 108 bytes with its terminator). */
const SOCKET_PATH_MAX = 107;

/**
 * Where the spawner of dispatcher `instance` listens: under DATA_DIR, or under the system's
 * temporary folder when that path would be too long for a socket.
 */
export function spawnerSocketPath(spawnerDir: string, instance: string): string {
  const name = `${createHash('sha256').update(instance).digest('hex').slice(0, 16)}.sock`;
  const inDataDir = path.join(spawnerDir, name);
  if (Buffer.byteLength(inDataDir) <= SOCKET_PATH_MAX) return inDataDir;
  const key = createHash('sha256').update(inDataDir).digest('hex').slice(0, 16);
  return path.join(tmpdir(), `agent-spawner-${key}.sock`);
}

/** `<task>.exit` beside `<task>.log`: how an agent ended, written by the spawner that saw it. */
export function exitFileOf(logDir: string, taskId: string): string {
  return path.join(logDir, `${safeTaskId(taskId)}.exit`);
}

export function logFileOf(logDir: string, taskId: string): string {
  return path.join(logDir, `${safeTaskId(taskId)}.log`);
}

function safeTaskId(taskId: string): string {
  return taskId.replace(/[^0-9a-zA-Z-]/g, '');
}

/**
 * Calls `onLine` with each non-blank line a socket receives (the protocol is one JSON message a
 * line, both ways), however the bytes are split into chunks.
 */
export function onLines(socket: { setEncoding(encoding: 'utf8'): unknown; on(event: 'data', listener: (text: string) => void): unknown }, onLine: (line: string) => void): void {
  socket.setEncoding('utf8');
  let pending = '';
  socket.on('data', (text: string) => {
    pending += text;
    let newline: number;
    while ((newline = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      if (line.trim()) onLine(line);
    }
  });
}
