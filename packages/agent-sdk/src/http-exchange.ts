import { Agent, IncomingMessage, request as httpRequest, RequestOptions } from 'node:http';

/**
 * One HTTP exchange over Node's own `http` module (`https` for an https dispatcher), its answer
 * read whole. Not the global `fetch`: Node loads and compiles fetch's implementation (undici) at
 * its first call, about 45 ms of CPU against about 9 ms for `node:http` on the machines this is
 * measured on, and an agent's first call is its check-in: every cold start would pay it before the
 * task begins. The protocol's calls are small JSON bodies and objects read whole, which is all this
 * does: no streaming, no redirects.
 */
export interface HttpAnswer {
  status: number;
  statusText: string;
  ok: boolean;
  body: Buffer;
  text(): string;
}

export interface HttpExchange {
  method: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
  /** The whole exchange, the answer's body read included. */
  timeoutMs: number;
}

/** Kept-alive connections, as fetch keeps them: an idle one does not hold the process open. */
const agents = new Map<string, Agent>();

async function clientFor(protocol: string): Promise<{ agent: Agent; request: typeof httpRequest }> {
  if (protocol === 'http:') {
    if (!agents.has(protocol)) agents.set(protocol, new Agent({ keepAlive: true }));
    return { agent: agents.get(protocol)!, request: httpRequest };
  }
  if (protocol !== 'https:') throw new Error(`unsupported protocol ${protocol} (http: or https: are)`);
  // https, and the TLS it loads, only for a dispatcher reached through it.
  const https = await import('node:https');
  if (!agents.has(protocol)) agents.set(protocol, new https.Agent({ keepAlive: true }));
  return { agent: agents.get(protocol)!, request: https.request as typeof httpRequest };
}

export async function exchange(url: string, init: HttpExchange): Promise<HttpAnswer> {
  const target = new URL(url);
  const { agent, request } = await clientFor(target.protocol);
  const body = init.body === undefined ? undefined : typeof init.body === 'string' ? Buffer.from(init.body, 'utf8') : Buffer.from(init.body.buffer, init.body.byteOffset, init.body.byteLength);
  const headers = { ...init.headers, ...(body ? { 'content-length': String(body.length) } : {}) };
  const options: RequestOptions = { method: init.method, headers, agent };
  return new Promise<HttpAnswer>((resolve, reject) => {
    const outgoing = request(target, options, (answer: IncomingMessage) => {
      const chunks: Buffer[] = [];
      answer.on('data', (chunk: Buffer) => chunks.push(chunk));
      answer.on('error', fail);
      answer.on('end', () => {
        clearTimeout(timer);
        const status = answer.statusCode ?? 0;
        const whole = Buffer.concat(chunks);
        resolve({ status, statusText: answer.statusMessage ?? '', ok: status >= 200 && status < 300, body: whole, text: () => whole.toString('utf8') });
      });
    });
    const timer = setTimeout(() => outgoing.destroy(Object.assign(new Error(`no answer within ${init.timeoutMs} ms`), { name: 'TimeoutError' })), init.timeoutMs);
    function fail(error: Error): void {
      clearTimeout(timer);
      reject(error);
    }
    outgoing.on('error', fail);
    outgoing.end(body);
  });
}
