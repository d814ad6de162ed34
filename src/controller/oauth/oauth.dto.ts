import { ApiProperty } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayNotEmpty, IsArray, IsString, Length } from 'class-validator';
import { SCOPES } from '../auth/scopes';

export class CreateOAuthClientDto {
  @ApiProperty({ example: 'ci-orchestrator', maxLength: 200 })
  @IsString()
  @Length(1, 200)
  name: string;

  @ApiProperty({ enum: SCOPES, isArray: true, example: ['tasks:read', 'tasks:write'] })
  @IsArray()
  @ArrayNotEmpty()
  @ArrayMaxSize(SCOPES.length)
  @IsString({ each: true })
  scopes: string[];
}

export interface OAuthClientView {
  client_id: string;
  name: string;
  scopes: string[];
  created_at: string;
}

export interface CreatedOAuthClientView extends OAuthClientView {
  /** Shown this once; only its hash is kept. */
  client_secret: string;
}

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  scope: string;
}
