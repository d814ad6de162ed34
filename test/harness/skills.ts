import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import { request as httpRequest } from 'node:http';
import * as path from 'node:path';
import { createObjectStorage } from '../../src/shared/storage/storage.module';
import { http, HttpAnswer } from './http';
import { TestSystem } from './system';
import { buildZip } from './zip-builder';

export const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** A valid package of `size` random bytes (stored, so it does not shrink). */
export function randomPackage(size = 4096): Buffer {
  return buildZip([{ name: 'SKILL.md', data: '---\nname: random\n---\n' }, { name: 'data.bin', data: randomBytes(size), store: true }]);
}

/** The skills API of one test system, as the operator. */
export function skillsApi(system: TestSystem) {
  const base = `${system.controllerUrl}/api/v1/skills`;
  const headers = { authorization: `Token ${system.apiToken}` };
  const storage = createObjectStorage(system.config);
  return {
    base,
    headers,
    create: (body: Record<string, unknown>) => http('POST', `${base}/`, { json: body, headers }),
    /** A new skill with a unique name; answers its slug. */
    async makeSkill(fields: Record<string, unknown> = {}): Promise<string> {
      const answer = await http('POST', `${base}/`, { json: { name: `Skill ${randomBytes(4).toString('hex')}`, category: 'tool', ...fields }, headers });
      if (answer.status !== 201) throw new Error(`skill not created: ${answer.status} ${answer.text}`);
      return answer.body.slug;
    },
    get: (slug: string) => http('GET', `${base}/${slug}/`, { headers }),
    async upload(slug: string, bytes: Buffer, options: { field?: string; filename?: string } = {}): Promise<HttpAnswer> {
      const form = new FormData();
      form.append(options.field ?? 'file', new Blob([bytes], { type: 'application/zip' }), options.filename ?? 'package.zip');
      const response = await fetch(`${base}/${slug}/upload/`, { method: 'POST', body: form, headers });
      const text = await response.text();
      return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : null, text };
    },
    async download(slug: string, options: { version?: number | string; ifNoneMatch?: string } = {}) {
      const query = options.version !== undefined ? `?version=${options.version}` : '';
      const requestHeaders: Record<string, string> = { ...headers };
      if (options.ifNoneMatch) requestHeaders['if-none-match'] = options.ifNoneMatch;
      const response = await fetch(`${base}/${slug}/download/${query}`, { headers: requestHeaders });
      return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) };
    },
    blobExists: (bytes: Buffer) => storage.exists(`skills/sha256/${sha256(bytes)}.zip`),
    /** Files left in DATA_DIR/tmp, after giving in-flight cleanup a moment. */
    async tempFiles(): Promise<string[]> {
      const folder = path.join(system.config.dataDir, 'tmp');
      for (let attempt = 0; ; attempt++) {
        const files = fs.existsSync(folder) ? fs.readdirSync(folder) : [];
        if (files.length === 0 || attempt >= 50) return files;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    /** Sends only the headers of a multipart upload declaring `contentLength` bytes, and reads the answer. */
    declaredUpload(slug: string, contentLength: number): Promise<{ status: number; text: string }> {
      return new Promise((resolve, reject) => {
        const request = httpRequest(`${base}/${slug}/upload/`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'multipart/form-data; boundary=xyz', 'content-length': contentLength },
        });
        request.on('error', reject);
        request.on('response', (response) => {
          let text = '';
          response.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
          response.on('end', () => {
            request.destroy();
            resolve({ status: response.statusCode ?? 0, text });
          });
        });
        request.flushHeaders();
      });
    },
    /** Sends half of a multipart upload, waits until the server is writing it, then drops the connection. */
    async abortedUpload(slug: string, bytes: Buffer): Promise<{ serverWasWriting: boolean }> {
      const boundary = `----skill${randomBytes(8).toString('hex')}`;
      const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="p.zip"\r\nContent-Type: application/zip\r\n\r\n`);
      const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
      const request = httpRequest(`${base}/${slug}/upload/`, {
        method: 'POST',
        headers: { ...headers, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': head.length + bytes.length + tail.length },
      });
      request.on('error', () => undefined);
      request.write(Buffer.concat([head, bytes.subarray(0, bytes.length / 2)]));
      const folder = path.join(system.config.dataDir, 'tmp');
      const writing = () => fs.existsSync(folder) && fs.readdirSync(folder).length > 0;
      for (let attempt = 0; attempt < 100 && !writing(); attempt++) await new Promise((resolve) => setTimeout(resolve, 20));
      const serverWasWriting = writing();
      request.destroy();
      return { serverWasWriting };
    },
  };
}
