import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { Strategy as BearerStrategy } from 'passport-http-bearer';
import { strategyRegistry } from '../../shared/auth/passport-strategy';
import { AuthService } from './auth.service';
import { Principal } from './principal';

/** `Authorization: Bearer <access_token>` (RFC 6750), a token from POST /api/v1/oauth/token/. */
@Injectable()
export class OAuthBearerStrategy extends PassportStrategy(BearerStrategy, 'oauth-bearer') {
  constructor(private readonly auth: AuthService) {
    super();
  }

  protected getPassportInstance() {
    return strategyRegistry;
  }

  validate(accessToken: string): Promise<Principal | null> {
    return this.auth.resolveClient(accessToken);
  }
}
