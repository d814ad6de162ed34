import { Body, Controller, Delete, Get, Header, HttpCode, Param, Post, Req, UseFilters } from '@nestjs/common';
import { ApiConsumes, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import { OperatorOnly } from '../auth/auth.decorators';
import { OAuthClientsService } from './oauth-clients.service';
import { OAuthErrorFilter } from './oauth-error.filter';
import { OAuthTokensService } from './oauth-tokens.service';
import { CreatedOAuthClientView, CreateOAuthClientDto, OAuthClientView, TokenResponse } from './oauth.dto';
import { parseTokenRequest } from './token-request';

@ApiTags('oauth')
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
  @ApiOperation({ summary: 'Client credentials grant (RFC 6749 4.4): an access token for an OAuth client' })
  token(@Body() body: Record<string, unknown>, @Req() request: Request): Promise<TokenResponse> {
    const tokenRequest = parseTokenRequest(body, request.headers.authorization);
    return this.tokens.issue(tokenRequest, request.ip ?? 'unknown');
  }

  @Post('clients')
  @OperatorOnly()
  @ApiOperation({ summary: 'Create an OAuth client; its secret is shown in this answer only' })
  createClient(@Body() dto: CreateOAuthClientDto): Promise<CreatedOAuthClientView> {
    return this.clients.create(dto.name, dto.scopes);
  }

  @Get('clients')
  @OperatorOnly()
  @ApiOperation({ summary: 'List OAuth clients (without secrets)' })
  async listClients(): Promise<{ count: number; next: null; previous: null; results: OAuthClientView[] }> {
    const results = await this.clients.list();
    return { count: results.length, next: null, previous: null, results };
  }

  @Delete('clients/:clientId')
  @HttpCode(204)
  @OperatorOnly()
  @ApiOperation({ summary: 'Delete an OAuth client; its access tokens stop working at once' })
  deleteClient(@Param('clientId') clientId: string): Promise<void> {
    return this.clients.delete(clientId);
  }
}
