import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { onLines, SpawnedAgent, SpawnerAnswer, SpawnerExitEvent, SpawnerRequest } from './spawner-protocol';

/** How long a connection waits for a spawner it has just started to listen. */
const START_TIMEOUT_MS = 10_000;

export interface SpawnerLocation {
  socketPath: string;
  /** Holds the socket (unless its path is too long for one) and `spawner.log`. */
  stateDir: string;
  logDir: string;
  /** The spawner program: `process-spawner.js` from the build. */
  program: string;
  orphanSeconds: number;
  /** The environment the spawner itself runs with (never the dispatcher's secrets). */
  env: Record<string, string>;
}

/**
 * The dispatcher's side of the spawner socket: connects on first use, starts the spawner
 * when nobody answers there, and connects again (starting a new spawner if need be) after
 * the connection is lost.
 */
export class SpawnerClient {
  private connection?: Promise<net.Socket>;
  private readonly waiting = new Map<number, { resolve: (answer: SpawnerAnswer) => void; reject: (error: Error) => void }>();
  private nextId = 1;
  private closed = false;

  constructor(private readonly where: SpawnerLocation, private readonly onExit: (agent: SpawnedAgent) => void) {}

  /**
   * One request and its answer. A request other than a spawn is sent once more when the
   * connection drops before its answer (a spawner that died meanwhile is started anew);
   * a spawn is not, since it may have been done.
   */
  async request(request: SpawnerRequest): Promise<SpawnerAnswer & { ok: true }> {
    try {
      return await this.requestOnce(request);
    } catch (error) {
      if (request.op === 'spawn' || !(error instanceof ConnectionLost)) throw error;
      return this.requestOnce(request);
    }
  }

  private async requestOnce(request: SpawnerRequest): Promise<SpawnerAnswer & { ok: true }> {
    const socket = await this.connect();
    const id = this.nextId++;
    const answer = await new Promise<SpawnerAnswer>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      socket.write(`${JSON.stringify({ ...request, id })}\n`);
    });
    if (!answer.ok) throw new Error(answer.error);
    return answer;
  }

  close(): void {
    this.closed = true;
    void this.connection?.then((socket) => socket.destroy(), () => undefined);
    this.connection = undefined;
  }

  private connect(): Promise<net.Socket> {
    if (this.closed) return Promise.reject(new Error('the process engine is closed'));
    this.connection ??= this.open().catch((error: unknown) => {
      this.connection = undefined;
      throw error;
    });
    return this.connection;
  }

  private async open(): Promise<net.Socket> {
    const first = await tryConnect(this.where.socketPath);
    if (first) return this.adopt(first);
    this.launch();
    const until = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      const socket = await tryConnect(this.where.socketPath);
      if (socket) return this.adopt(socket);
      if (Date.now() > until) throw new Error(`the process spawner did not listen on ${this.where.socketPath} within ${START_TIMEOUT_MS / 1000} s`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** Starts a spawner in a session of its own, so that neither this process's end nor its group's signals reach it. */
  private launch(): void {
    mkdirSync(this.where.stateDir, { recursive: true });
    const logFd = openSync(path.join(this.where.stateDir, 'spawner.log'), 'a');
    try {
      const child = spawn(process.execPath, [this.where.program, this.where.socketPath, this.where.logDir, String(this.where.orphanSeconds)], {
        detached: true,
        stdio: ['ignore', logFd, logFd],
        env: this.where.env,
      });
      child.on('error', () => undefined);
      child.unref();
    } finally {
      closeSync(logFd);
    }
  }

  private adopt(socket: net.Socket): net.Socket {
    socket.unref();
    onLines(socket, (line) => this.receive(JSON.parse(line) as SpawnerAnswer | SpawnerExitEvent));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      this.connection = undefined;
      const lost = new ConnectionLost('the connection to the process spawner was lost');
      for (const waiter of this.waiting.values()) waiter.reject(lost);
      this.waiting.clear();
    });
    return socket;
  }

  private receive(message: SpawnerAnswer | SpawnerExitEvent): void {
    if ('event' in message) {
      this.onExit(message.agent);
      return;
    }
    const waiter = this.waiting.get(message.id);
    this.waiting.delete(message.id);
    waiter?.resolve(message);
  }
}

class ConnectionLost extends Error {}

function tryConnect(socketPath: string): Promise<net.Socket | null> {
  if (!existsSync(socketPath)) return Promise.resolve(null);
  return new Promise((resolve) => {
    const socket = net.connect(socketPath);
    socket.once('connect', () => resolve(socket));
    socket.once('error', () => resolve(null));
  });
}
