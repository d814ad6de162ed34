import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** What the receiver does with the next request: answer with a status, or hold it unanswered. */
export type ReceiverMode = { status: number } | 'hang';

export interface ReceivedDelivery {
  id: string;
  timestamp: string;
  signature: string;
  raw: string;
  body: { type: string; timestamp: string; data: Record<string, any> };
  answered: number | null;
  at: number;
}

/**
 * A subscriber's endpoint on loopback: records every POST with its Standard Webhooks
 * headers and answers as told (200 by default). `verify(secret)` checks each recorded
 * delivery with the `standardwebhooks` package, as a receiver would.
 */
export class EventReceiver {
  readonly received: ReceivedDelivery[] = [];
  mode: ReceiverMode = { status: 200 };
  private server?: Server;
  private readonly held: ServerResponse[] = [];

  constructor(private readonly host = '127.0.0.1', private port = 0) {}

  get url(): string {
    return `http://${this.host}:${this.port}/hooks`;
  }

  async start(): Promise<this> {
    this.server = createServer((request, response) => this.handle(request, response));
    await new Promise<void>((resolve) => this.server!.listen(this.port, this.host, resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  /** Stops listening (connections refused) until `start()` again on the same port. */
  async stop(): Promise<void> {
    for (const response of this.held.splice(0)) response.destroy();
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Deliveries answered with a 2xx. */
  get accepted(): ReceivedDelivery[] {
    return this.received.filter((delivery) => delivery.answered !== null && delivery.answered < 300);
  }

  ofType(type: string): ReceivedDelivery[] {
    return this.accepted.filter((delivery) => delivery.body.type === type);
  }

  verify(delivery: ReceivedDelivery, secret: string): unknown {
    return new Webhook(secret).verify(delivery.raw, {
      'webhook-id': delivery.id,
      'webhook-timestamp': delivery.timestamp,
      'webhook-signature': delivery.signature,
    });
  }

  private handle(request: IncomingMessage, response: ServerResponse): void {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const mode = this.mode;
      const delivery: ReceivedDelivery = {
        id: String(request.headers['webhook-id']),
        timestamp: String(request.headers['webhook-timestamp']),
        signature: String(request.headers['webhook-signature']),
        raw,
        body: JSON.parse(raw),
        answered: mode === 'hang' ? null : mode.status,
        at: Date.now(),
      };
      this.received.push(delivery);
      if (mode === 'hang') {
        this.held.push(response);
        return;
      }
      response.writeHead(mode.status, { 'content-type': 'text/plain' }).end(mode.status < 300 ? 'ok' : 'no');
    });
  }
}
