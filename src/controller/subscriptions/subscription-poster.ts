import * as http from 'node:http';
import * as https from 'node:https';
import { TargetPolicy } from './subscription-target';

/** No answer within this long is a failed attempt (Svix waits as long). */
export const ATTEMPT_TIMEOUT_MS = 15_000;
/** The delivery log keeps this much of an answer. */
export const RESPONSE_BYTES = 4096;

export interface PostResult {
  status: number | null;
  /** The answer's first bytes, or null when none came. */
  response: string | null;
  error: string | null;
  durationMs: number;
}

/**
 * POSTs one signed delivery. The address is resolved and checked by the policy's `lookup`
 * and the connection goes to that address; redirects are answers like any other (never
 * followed); at most RESPONSE_BYTES of the answer are read.
 */
export class SubscriptionPoster {
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;

  constructor(private readonly policy: TargetPolicy) {
    this.httpAgent = new http.Agent({ keepAlive: true, maxSockets: 64 });
    this.httpsAgent = new https.Agent({ keepAlive: true, maxSockets: 64 });
  }

  post(target: string, body: string, headers: Record<string, string>): Promise<PostResult> {
    const started = Date.now();
    const done = (status: number | null, response: string | null, error: string | null): PostResult => ({ status, response, error, durationMs: Date.now() - started });
    const url = new URL(target);
    const refusal = this.policy.literalRefusal(url);
    if (refusal) return Promise.resolve(done(null, null, `refused: ${refusal}`));
    const secure = url.protocol === 'https:';
    return new Promise<PostResult>((resolve) => {
      const request = (secure ? https : http).request(url, {
        method: 'POST',
        agent: secure ? this.httpsAgent : this.httpAgent,
        lookup: this.policy.lookup as never,
        headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), 'user-agent': 'agent-task-controller-webhooks', ...headers },
      });
      const timer = setTimeout(() => request.destroy(new Error(`no answer within ${ATTEMPT_TIMEOUT_MS / 1000} s`)), ATTEMPT_TIMEOUT_MS);
      const finish = (result: PostResult) => {
        clearTimeout(timer);
        resolve(result);
      };
      request.on('error', (error) => finish(done(null, null, error.message)));
      request.on('response', (answer) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const end = () => finish(done(answer.statusCode ?? null, Buffer.concat(chunks).subarray(0, RESPONSE_BYTES).toString('utf8'), null));
        answer.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          size += chunk.length;
          if (size >= RESPONSE_BYTES) {
            answer.destroy();
            end();
          }
        });
        answer.on('end', end);
        answer.on('error', end);
      });
      request.end(body);
    });
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}
