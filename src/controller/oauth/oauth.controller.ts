import { Body, Controller, Delete, Get, Header, HttpCode, Param, Post, Req, UseFilters } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiOperation, ApiResponse, ApiSecurity, ApiTags } from '@nestjs/swagger';
import { Answers, AnswersEmpty, Refuses } from '../../shared/http/openapi-decorators';
import { ref } from '../../shared/http/openapi-schema';
import type { Request } from 'express';
import { OperatorOnly } from '../auth/auth.decorators';
import { OAuthClientsService } from './oauth-clients.service';
import { OAuthErrorFilter } from './oauth-error.filter';
import { OAuthTokensService } from './oauth-tokens.service';
import { CreatedOAuthClientView, CreateOAuthClientDto, OAuthClientView, TokenResponse } from './oauth.dto';
import { parseTokenRequest } from './token-request';
import { AuditResource } from '../audit/audit.decorators';

@ApiTags('oauth')
@AuditResource('oauth_client', { param: 'clientId', answer: 'client_id' })
@Controller('api/v1/oauth')
export class OAuthController {
  constructor(
    private readonly tokens: OAuthTokensService,
    private readonly clients: OAuthClientsService,
  ) {}

  @Post('token')
  @HttpCode(200)
  @Header('Cache-Control', 'no-store')
  @Header('Pragma', 'no-cache')
  @UseFilters(OAuthErrorFilter)
  @ApiConsumes('application/x-www-form-urlencoded', 'application/json')
  @ApiBody({ schema: ref('TokenRequest') })
  // HTTP Basic, or none: client_id and client_secret in the body (client_secret_post).
  @ApiSecurity({})
  @ApiSecurity('client_basic')
  @ApiOperation({ summary: 'Client credentials grant (RFC 6749 4.4): an access token for an OAuth client' })
  @Answers(200, 'TokenResponse', 'The access token', {
    'Cache-Control': { description: 'no-store', schema: { type: 'string' } },
    Pragma: { description: 'no-cache', schema: { type: 'string' } },
  })
  @ApiResponse({ status: 400, description: 'invalid_request, unsupported_grant_type or invalid_scope (RFC 6749 5.2)', schema: ref('OAuthError') })
  @ApiResponse({
    status: 401,
    description: 'invalid_client: unknown client or wrong secret (RFC 6749 5.2)',
    schema: ref('OAuthError'),
    headers: { 'WWW-Authenticate': { description: 'Basic realm="oauth"', schema: { type: 'string' } } },
  })
  @Refuses({ 429: 'throttled: too many token requests, or failed authentications for this client or address' })
  token(@Body() body: Record<string, unknown>, @Req() request: Request): Promise<TokenResponse> {
    const tokenRequest = parseTokenRequest(body, request.headers.authorization);
    return this.tokens.issue(tokenRequest, request.ip ?? 'unknown');
  }

  @Post('clients')
  @OperatorOnly()
  @ApiOperation({ summary: 'Create an OAuth client; its secret is shown in this answer only' })
  @Answers(201, 'CreatedOAuthClient', 'The client, with its secret this once')
  createClient(@Body() dto: CreateOAuthClientDto): Promise<CreatedOAuthClientView> {
    return this.clients.create(dto.name, dto.scopes);
  }

  @Get('clients')
  @OperatorOnly()
  @ApiOperation({ summary: 'List OAuth clients (without secrets)' })
  @Answers(200, 'OAuthClientPage', 'Every client, in one page')
  async listClients(): Promise<{ count: number; next: null; previous: null; results: OAuthClientView[] }> {
    const results = await this.clients.list();
    return { count: results.length, next: null, previous: null, results };
  }

  @Delete('clients/:clientId')
  @HttpCode(204)
  @OperatorOnly()
  @ApiOperation({ summary: 'Delete an OAuth client; its access tokens stop working at once' })
  @AnswersEmpty(204, 'Deleted')
  @Refuses({ 404: 'not_found: no such client' })
  deleteClient(@Param('clientId') clientId: string): Promise<void> {
    return this.clients.delete(clientId);
  }
}
