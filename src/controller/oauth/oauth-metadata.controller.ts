import { Controller, Get, Header, Inject } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { Answers } from '../../shared/http/openapi-decorators';
import { SCOPES } from '../auth/scopes';

/** RFC 8414 metadata, so OAuth client libraries find the token endpoint by discovery. */
export interface AuthorizationServerMetadata {
  issuer: string;
  token_endpoint: string;
  grant_types_supported: string[];
  token_endpoint_auth_methods_supported: string[];
  scopes_supported: string[];
  response_types_supported: string[];
}

@ApiTags('oauth')
@Controller('.well-known/oauth-authorization-server')
export class OAuthMetadataController {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  @Get()
  @Header('Cache-Control', 'public, max-age=3600')
  @ApiOperation({ operationId: 'oauth_metadata', summary: 'OAuth 2.0 authorization server metadata (RFC 8414)' })
  @Answers(200, 'AuthorizationServerMetadata', 'The issuer (PUBLIC_URL), the token endpoint, the grant, the client authentication methods and the scopes')
  metadata(): AuthorizationServerMetadata {
    return {
      issuer: this.config.publicUrl,
      token_endpoint: `${this.config.publicUrl}/api/v1/oauth/token/`,
      grant_types_supported: ['client_credentials'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      scopes_supported: [...SCOPES],
      // No authorization endpoint: the client credentials grant needs none.
      response_types_supported: [],
    };
  }
}
