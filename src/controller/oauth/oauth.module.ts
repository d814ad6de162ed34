import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { OAuthAccessToken } from './oauth-access-token.entity';
import { OAuthClient } from './oauth-client.entity';
import { OAuthClientsService } from './oauth-clients.service';
import { OAuthTokensService } from './oauth-tokens.service';
import { OAuthController } from './oauth.controller';

/** The token endpoint and client management. Access tokens are checked by AuthModule. */
@Module({
  imports: [TypeOrmModule.forFeature([OAuthClient, OAuthAccessToken])],
  controllers: [OAuthController],
  providers: [OAuthClientsService, OAuthTokensService],
})
export class OAuthModule {}
