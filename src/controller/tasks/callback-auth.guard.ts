import {
  applyDecorators, CanActivate, createParamDecorator, ExecutionContext, Inject, Injectable, SetMetadata, UseGuards,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ApiBearerAuth, ApiForbiddenResponse, ApiHeader, ApiNotFoundResponse, ApiUnauthorizedResponse } from '@nestjs/swagger';
import { isUUID } from 'class-validator';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { DomainError } from '../../shared/errors/domain-error';
import type { RawBodyRequest } from '../../shared/http/configure-app';
import { verifyCallbackSignature } from '../../shared/task-protocol/callback-signature';
import { callbackTokenMatches } from './callback-token';
import { Task } from './tasks.entity';
import { TasksRepository } from './tasks.repository';

/** `required`: the final callback; `when-sent`: progress, checked only when it carries one. */
export type SignaturePolicy = 'required' | 'when-sent';

const SIGNATURE_POLICY = 'atc:callback-signature';
const WWW_AUTHENTICATE = { 'WWW-Authenticate': 'Bearer realm="task-callback"' };

interface CallbackRequest extends RawBodyRequest {
  task?: Task;
}

/**
 * The dispatcher running one task (CONTRACT "Task callback"): unknown task 404; a Bearer
 * token that is not the task's 401; with CALLBACK_SIGNING_KEY set, `X-Service-Signature`
 * over the raw request bytes, else 403. The task it proves is attached for the handler.
 */
@Injectable()
export class CallbackAuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly tasks: TasksRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<CallbackRequest>();
    const guid = String(request.params.guid ?? '');
    const task = isUUID(guid) ? await this.tasks.findByGuid(guid) : null;
    if (!task) throw DomainError.notFound('Task');
    const token = bearerToken(request.headers.authorization);
    if (!token) throw new DomainError('not_authenticated', 'A Bearer callback token is required.', { headers: WWW_AUTHENTICATE });
    if (!callbackTokenMatches(token, task.callbackTokenHash)) {
      throw new DomainError('authentication_failed', "The callback token is not this task's.", { headers: WWW_AUTHENTICATE });
    }
    const policy = this.reflector.get<SignaturePolicy>(SIGNATURE_POLICY, context.getHandler()) ?? 'required';
    const signature = request.headers['x-service-signature'];
    const key = this.config.callbackSigningKey;
    if (key && (policy === 'required' || signature !== undefined)) {
      if (!verifyCallbackSignature(key, request.rawBody ?? Buffer.alloc(0), typeof signature === 'string' ? signature : undefined)) {
        throw new DomainError('invalid_signature', 'X-Service-Signature is missing or does not match the body.');
      }
    }
    request.task = task;
    return true;
  }
}

/** Authenticated as the dispatcher running the task named by the `:guid` path parameter. */
export function CallbackAuth(signature: SignaturePolicy) {
  return applyDecorators(
    SetMetadata(SIGNATURE_POLICY, signature),
    UseGuards(CallbackAuthGuard),
    ApiBearerAuth('callback_token'),
    ApiHeader({
      name: 'X-Service-Signature',
      required: false,
      description: `sha256=<hex HMAC-SHA256(CALLBACK_SIGNING_KEY, raw body)>; ${signature === 'required' ? 'required' : 'checked when sent'} when the key is set`,
    }),
    ApiNotFoundResponse({ description: 'not_found: no such task' }),
    ApiUnauthorizedResponse({ description: "not_authenticated or authentication_failed: not the task's callback token" }),
    ApiForbiddenResponse({ description: 'invalid_signature: X-Service-Signature missing or wrong' }),
  );
}

/** The task a `@CallbackAuth()` endpoint was authenticated for. */
export const CallbackTask = createParamDecorator((_data: unknown, context: ExecutionContext): Task => {
  const task = context.switchToHttp().getRequest<CallbackRequest>().task;
  if (!task) throw new Error('CallbackTask used on an endpoint without @CallbackAuth()');
  return task;
});

function bearerToken(authorization: string | undefined): string | null {
  const match = authorization ? /^Bearer\s+(\S+)\s*$/i.exec(authorization) : null;
  return match ? match[1] : null;
}
