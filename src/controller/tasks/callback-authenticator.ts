import type { IncomingHttpHeaders } from 'node:http';
import { Inject, Injectable } from '@nestjs/common';
import { isUUID } from 'class-validator';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { DomainError } from '../../shared/errors/domain-error';
import { verifyCallbackSignature } from '../../shared/task-protocol/callback-signature';
import { callbackTokenMatches, hashCallbackToken } from './callback-token';
import { TaskAttemptsRepository } from '../scheduling/task-attempts.repository';
import { Task } from './tasks.entity';
import { TasksRepository } from './tasks.repository';

/** `required`: the final callback; `when-sent`: progress, checked only when it carries one. */
export type SignaturePolicy = 'required' | 'when-sent';

const WWW_AUTHENTICATE = { 'WWW-Authenticate': 'Bearer realm="task-callback"' };

/**
 * Who sent a callback or progress request, as the guard established it. When the request
 * carries a Bearer token and its signature checks out (or needs none), the guard does not
 * read the task: the handler's one conditional UPDATE names the token's hash, so a write
 * that happens proves the caller, and only a write that does not calls `task()`, which
 * reads the task and refuses in the contract's order (404, 401, 403).
 */
export class CallbackCaller {
  private loaded?: Promise<Task>;

  constructor(
    readonly guid: string,
    /** The hash of the Bearer token, to match `callback_token_hash` in the statement. */
    readonly tokenHash: string | null,
    private readonly authenticate: () => Promise<Task>,
  ) {}

  /** The task, once the caller is proven to be its dispatcher; throws the refusal otherwise. */
  task(): Promise<Task> {
    this.loaded ??= this.authenticate();
    return this.loaded;
  }
}

/**
 * The dispatcher running one task (CONTRACT "Task callback"): unknown task 404; a Bearer
 * token that is not the task's 401; with CALLBACK_SIGNING_KEY set, `X-Service-Signature`
 * over the raw request bytes, else 403.
 */
@Injectable()
export class CallbackAuthenticator {
  constructor(
    private readonly tasks: TasksRepository,
    private readonly attempts: TaskAttemptsRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async authenticate(request: { guid: string; headers: IncomingHttpHeaders; rawBody: Buffer }, policy: SignaturePolicy): Promise<CallbackCaller> {
    const { guid } = request;
    const token = bearerToken(request.headers.authorization);
    const signed = this.signatureAccepted(request.headers, request.rawBody, policy);
    const check = () => this.check(guid, token, signed);
    if (isUUID(guid) && token && signed) return new CallbackCaller(guid, hashCallbackToken(token), check);
    const task = await check();
    return new CallbackCaller(guid, null, () => Promise.resolve(task));
  }

  private async check(guid: string, token: string | null, signed: boolean): Promise<Task> {
    const task = isUUID(guid) ? await this.tasks.findByGuid(guid) : null;
    if (!task) throw DomainError.notFound('Task');
    if (!token) throw new DomainError('not_authenticated', 'A Bearer callback token is required.', { headers: WWW_AUTHENTICATE });
    if (!callbackTokenMatches(token, task.callbackTokenHash)) {
      // An earlier attempt's own dispatcher, late: a conflict, not a stranger.
      const attempt = signed ? await this.attempts.attemptOfToken(guid, hashCallbackToken(token)) : null;
      if (attempt !== null) {
        throw DomainError.conflict(`This report is for attempt ${attempt}; the task is on attempt ${task.attempt} now and keeps it.`, {
          attempt, current_attempt: task.attempt, status: task.status,
        });
      }
      throw new DomainError('authentication_failed', "The callback token is not this task's.", { headers: WWW_AUTHENTICATE });
    }
    if (!signed) throw new DomainError('invalid_signature', 'X-Service-Signature is missing or does not match the body.');
    return task;
  }

  /** True when the request's signature matches, or the policy and settings ask for none. */
  private signatureAccepted(headers: IncomingHttpHeaders, rawBody: Buffer, policy: SignaturePolicy): boolean {
    const key = this.config.callbackSigningKey;
    const signature = headers['x-service-signature'];
    if (!key || (policy === 'when-sent' && signature === undefined)) return true;
    return verifyCallbackSignature(key, rawBody, typeof signature === 'string' ? signature : undefined);
  }
}

function bearerToken(authorization: string | undefined): string | null {
  const match = authorization ? /^Bearer\s+(\S+)\s*$/i.exec(authorization) : null;
  return match ? match[1] : null;
}
