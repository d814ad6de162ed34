import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import net from 'node:net';
import { DRAIN_MAX_BYTES } from '../../src/shared/http/drain-unread-body';
import { skillsApi } from '../harness/skills';
import { startTestSystem, TestSystem } from '../harness/system';

const MAX_JSON_BYTES = 16 * 1024;
const MAX_PACKAGE_BYTES = 256 * 1024;
/** Far past the limits and past what socket buffers hold, so a server that stops reading is seen. */
const HUGE = 64 * 1024 * 1024;

/** A body sent in chunks with no Content-Length, as a stream. */
function streamed(total: number, chunk = 64 * 1024): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream({
    pull(controller) {
      if (sent >= total) return controller.close();
      const size = Math.min(chunk, total - sent);
      sent += size;
      controller.enqueue(new Uint8Array(size).fill(0x61));
    },
  });
}

/** Node's own fetch (undici), the client that saw EPIPE where curl saw the 413. */
async function send(url: string, init: RequestInit & { duplex?: 'half' }): Promise<{ status: number; body: any }> {
  const response = await fetch(url, init);
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

describe('bodies over the limits are answered 413, not cut off', () => {
  let system: TestSystem;
  let slug: string;

  beforeAll(async () => {
    system = await startTestSystem({ env: { MAX_JSON_BYTES: String(MAX_JSON_BYTES), MAX_PACKAGE_BYTES: String(MAX_PACKAGE_BYTES) } });
    slug = await skillsApi(system).makeSkill();
  });
  afterAll(() => system?.close());

  const operator = () => ({ authorization: `Token ${system.apiToken}` });
  const jsonOf = (bytes: number) => JSON.stringify({ padding: 'x'.repeat(bytes) });

  it.each([
    ['controller POST /api/v1/tasks/', () => `${system.controllerUrl}/api/v1/tasks/`],
    ['controller POST /api/v1/webhooks/', () => `${system.controllerUrl}/api/v1/webhooks/`],
    ['controller POST /api/v1/tasks/{guid}/callback/', () => `${system.controllerUrl}/api/v1/tasks/${crypto.randomUUID()}/callback/`],
    ['dispatcher POST /tasks', () => `${system.dispatcherUrl}/tasks`],
  ])('%s: JSON over MAX_JSON_BYTES, with a Content-Length and streamed', async (_name, url) => {
    const sized = await send(url(), { method: 'POST', headers: { ...operator(), 'content-type': 'application/json' }, body: jsonOf(HUGE) });
    expect(sized.status).toBe(413);
    expect(JSON.stringify(sized.body)).toContain('payload_too_large');
    const chunked = await send(url(), { method: 'POST', headers: { ...operator(), 'content-type': 'application/json' }, body: streamed(HUGE), duplex: 'half' });
    expect(chunked.status).toBe(413);
    expect(JSON.stringify(chunked.body)).toContain('payload_too_large');
  });

  it('a skill package over MAX_PACKAGE_BYTES, as a form with a Content-Length and streamed', async () => {
    const form = new FormData();
    form.append('file', new Blob([randomBytes(HUGE)], { type: 'application/zip' }), 'package.zip');
    const sized = await send(`${system.controllerUrl}/api/v1/skills/${slug}/upload/`, { method: 'POST', headers: operator(), body: form });
    expect(sized).toMatchObject({ status: 413, body: { code: 'payload_too_large' } });

    const boundary = 'oversize-boundary';
    const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="p.zip"\r\nContent-Type: application/zip\r\n\r\n`);
    const parts = streamed(HUGE).getReader();
    let started = false;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (!started) {
          started = true;
          return controller.enqueue(head);
        }
        const { done, value } = await parts.read();
        if (done) {
          controller.enqueue(Buffer.from(`\r\n--${boundary}--\r\n`));
          return controller.close();
        }
        controller.enqueue(value);
      },
    });
    const chunked = await send(`${system.controllerUrl}/api/v1/skills/${slug}/upload/`, {
      method: 'POST', headers: { ...operator(), 'content-type': `multipart/form-data; boundary=${boundary}` }, body, duplex: 'half',
    });
    expect(chunked).toMatchObject({ status: 413, body: { code: 'payload_too_large' } });
  });

  it('an agent object over MAX_PACKAGE_BYTES', async () => {
    const answer = await send(`${system.dispatcherUrl}/agent/objects/results/some-task/big.bin`, {
      method: 'PUT', headers: { 'x-agent-key': 'not-checked-before-the-size', 'content-type': 'application/octet-stream' }, body: randomBytes(HUGE),
    });
    expect(answer.status).toBe(413);
    expect(answer.body).toMatchObject({ ok: false, error: { code: 'payload_too_large' } });
  });

  it('reads a bounded part of what follows a refusal, then closes the connection', async () => {
    const port = Number(new URL(system.controllerUrl).port);
    const socket = net.connect(port, '127.0.0.1');
    await once(socket, 'connect');
    socket.write(`POST /api/v1/tasks/ HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${1024 ** 3}\r\n\r\n`);
    let answer = '';
    socket.on('data', (chunk: Buffer) => {
      answer += chunk.toString('utf8');
    });
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.on('error', () => undefined);
    let written = 0;
    const chunk = Buffer.alloc(256 * 1024, 0x61);
    let open = true;
    void closed.then(() => {
      open = false;
    });
    while (open && written < 256 * 1024 * 1024) {
      if (!socket.write(chunk)) await Promise.race([once(socket, 'drain').catch(() => undefined), closed]);
      written += chunk.length;
    }
    await closed;
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer).toContain('payload_too_large');
    // The server read about DRAIN_MAX_BYTES past the refusal (plus socket buffers and what
    // loopback carries between two looks at the count), not the 256 MiB the client had.
    expect(written).toBeLessThan(DRAIN_MAX_BYTES + 64 * 1024 * 1024);
  });

  it('keeps serving on the same connections afterwards', async () => {
    for (let i = 0; i < 3; i += 1) {
      expect((await send(`${system.controllerUrl}/api/v1/tasks/`, { method: 'POST', headers: { ...operator(), 'content-type': 'application/json' }, body: jsonOf(HUGE) })).status).toBe(413);
      expect((await fetch(`${system.controllerUrl}/health/`)).status).toBe(200);
    }
  });
});
