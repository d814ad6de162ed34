import {
  applyDecorators, CanActivate, createParamDecorator, ExecutionContext, Injectable, SetMetadata, UseGuards,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ApiBearerAuth, ApiForbiddenResponse, ApiHeader, ApiNotFoundResponse, ApiUnauthorizedResponse } from '@nestjs/swagger';
import type { Response } from 'express';
import { runStrategy } from '../../shared/auth/passport-strategy';
import { CallbackCaller, SignaturePolicy } from './callback-authenticator';
import { CallbackRequest, CallbackTokenStrategy } from './callback-token.strategy';

export { CallbackAuthenticator, CallbackCaller } from './callback-authenticator';
export type { SignaturePolicy } from './callback-authenticator';

const SIGNATURE_POLICY = 'atc:callback-signature';

/** `CallbackTokenStrategy` for a Nest route marked `@CallbackAuth()`. */
@Injectable()
export class CallbackAuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly strategy: CallbackTokenStrategy,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<CallbackRequest>();
    request.callbackSignaturePolicy = this.reflector.get<SignaturePolicy>(SIGNATURE_POLICY, context.getHandler()) ?? 'required';
    const { user } = await runStrategy<CallbackCaller>(this.strategy, request, context.switchToHttp().getResponse<Response>());
    // The strategy refuses with the contract's errors itself; a plain failure is a bug.
    if (!user) throw new Error('task-callback strategy failed without a refusal');
    request.callbackCaller = user;
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

/** The caller a `@CallbackAuth()` endpoint was authenticated for. */
export const CallbackSender = createParamDecorator((_data: unknown, context: ExecutionContext): CallbackCaller => {
  const caller = context.switchToHttp().getRequest<CallbackRequest>().callbackCaller;
  if (!caller) throw new Error('CallbackSender used on an endpoint without @CallbackAuth()');
  return caller;
});
