import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { OAuthAccessToken } from './oauth-access-token.entity';
import { OAuthClient } from './oauth-client.entity';
import { OAuthClientsService } from './oauth-clients.service';
import { EmbeddedDispatcherClientService } from './embedded-dispatcher-client.service';
import { OAuthTokensService } from './oauth-tokens.service';
import { OAuthMetadataController } from './oauth-metadata.controller';
import { OAuthController } from './oauth.controller';

/** The token endpoint, its RFC 8414 metadata and client management. Access tokens are checked by AuthModule. */
@Module({
  imports: [TypeOrmModule.forFeature([OAuthClient, OAuthAccessToken])],
  controllers: [OAuthController, OAuthMetadataController],
  providers: [OAuthClientsService, OAuthTokensService, EmbeddedDispatcherClientService],
})
export class OAuthModule {}
