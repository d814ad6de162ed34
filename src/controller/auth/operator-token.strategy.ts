import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import type { Request } from 'express';
import { Strategy as CustomStrategy } from 'passport-custom';
import { strategyRegistry } from '../../shared/auth/passport-strategy';
import { AuthService, parseAuthorization } from './auth.service';
import { Principal } from './principal';

/** `Authorization: Token <key>`: API_TOKEN or an operator token made with the CLI. */
@Injectable()
export class OperatorTokenStrategy extends PassportStrategy(CustomStrategy, 'operator-token') {
  constructor(private readonly auth: AuthService) {
    super();
  }

  protected getPassportInstance() {
    return strategyRegistry;
  }

  async validate(request: Request): Promise<Principal | null> {
    const credentials = parseAuthorization(request.headers.authorization);
    if (credentials?.scheme !== 'token' || !credentials.value) return null;
    return this.auth.resolveOperator(credentials.value);
  }
}
