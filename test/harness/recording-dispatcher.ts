import { createServer, IncomingHttpHeaders, Server } from 'node:http';
import { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: any;
}

export interface DispatcherReply {
  status: number;
  body: unknown;
}

/**
 * A stand-in dispatcher on a loopback port that speaks the dispatcher's task API:
 * it keeps every request and answers what `reply` says (by default 201 `{ok: true, data}`).
 */
export class RecordingDispatcher {
  readonly requests: RecordedRequest[] = [];
  reply: (request: RecordedRequest) => DispatcherReply = (request) => ({
    status: request.path.endsWith('/cancel') ? 200 : 201,
    body: { ok: true, data: { task_id: request.body?.task_id, status: 'pending' } },
  });
  private server: Server | undefined;

  get url(): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  /** The task requests received (POST /tasks). */
  get taskRequests(): RecordedRequest[] {
    return this.requests.filter((request) => request.method === 'POST' && request.path === '/tasks');
  }

  async start(): Promise<this> {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const recorded: RecordedRequest = {
          method: request.method ?? '',
          path: request.url ?? '',
          headers: request.headers,
          body: text ? JSON.parse(text) : null,
        };
        this.requests.push(recorded);
        const { status, body } = this.reply(recorded);
        response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return this;
  }

  async stop(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server!.close(() => resolve()));
  }
}

