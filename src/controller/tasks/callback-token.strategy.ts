import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { Strategy as CustomStrategy } from 'passport-custom';
import { strategyRegistry } from '../../shared/auth/passport-strategy';
import type { RawBodyRequest } from '../../shared/http/configure-app';
import { CallbackAuthenticator, CallbackCaller, SignaturePolicy } from './callback-authenticator';

export interface CallbackRequest extends RawBodyRequest {
  /** Set by the guard from the route's `@CallbackAuth(policy)`. */
  callbackSignaturePolicy?: SignaturePolicy;
  callbackCaller?: CallbackCaller;
}

/**
 * The task's callback token (`Authorization: Bearer`) and, with CALLBACK_SIGNING_KEY set,
 * `X-Service-Signature` over the raw body. The checks are `CallbackAuthenticator`'s, which
 * the hot lane calls too, so both paths refuse alike (404, 401, 403, in that order).
 */
@Injectable()
export class CallbackTokenStrategy extends PassportStrategy(CustomStrategy, 'task-callback') {
  constructor(private readonly authenticator: CallbackAuthenticator) {
    super();
  }

  protected getPassportInstance() {
    return strategyRegistry;
  }

  validate(request: CallbackRequest): Promise<CallbackCaller> {
    return this.authenticator.authenticate(
      { guid: String(request.params.guid ?? ''), headers: request.headers, rawBody: request.rawBody ?? Buffer.alloc(0) },
      request.callbackSignaturePolicy ?? 'required',
    );
  }
}
