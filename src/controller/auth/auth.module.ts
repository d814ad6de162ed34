import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { OAuthAccessToken } from '../oauth/oauth-access-token.entity';
import { OAuthClient } from '../oauth/oauth-client.entity';
import { AuthThrottles } from './auth-throttles';
import { AuthController } from './auth.controller';
import { OperatorOrClientGuard } from './auth.guard';
import { AuthService } from './auth.service';
import { CredentialWatch } from './credential-watch';
import { OAuthBearerStrategy } from './oauth-bearer.strategy';
import { OperatorToken } from './operator-token.entity';
import { OperatorTokenStrategy } from './operator-token.strategy';
import { OperatorTokensService } from './operator-tokens.service';

/**
 * Global so any feature module can put `@OperatorOrScope()` / `@OperatorOnly()` on its
 * endpoints without importing anything: the guard resolves AuthService from here.
 */
@Global()
@Module({
  imports: [TypeOrmModule.forFeature([OperatorToken, OAuthClient, OAuthAccessToken])],
  controllers: [AuthController],
  providers: [AuthService, CredentialWatch, AuthThrottles, OperatorTokensService, OperatorTokenStrategy, OAuthBearerStrategy, OperatorOrClientGuard],
  exports: [AuthService, CredentialWatch, AuthThrottles, OperatorTokensService, OperatorTokenStrategy, OAuthBearerStrategy, OperatorOrClientGuard],
})
export class AuthModule {}
