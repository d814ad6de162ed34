import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsDateString, IsOptional, IsString, MaxLength } from 'class-validator';
import { KeysetPageQueryDto } from '../../shared/http/page-query.dto';

/** `GET /api/v1/audit/` filters, beside the keyset page's `limit`, `cursor` and `count`. */
export class ListAuditQueryDto extends KeysetPageQueryDto {
  @ApiPropertyOptional({ description: "The actor's name: an operator token's name or an OAuth client's client_id" })
  @IsOptional() @IsString() @MaxLength(200)
  actor?: string;

  @ApiPropertyOptional({ description: 'The OpenAPI operation id, dotted', example: 'tasks.cancel' })
  @IsOptional() @IsString() @MaxLength(100)
  action?: string;

  @ApiPropertyOptional({ example: 'task' })
  @IsOptional() @IsString() @MaxLength(100)
  resource_type?: string;

  @ApiPropertyOptional({ description: 'A task guid, workflow id, skill or dispatcher slug, client_id, ...' })
  @IsOptional() @IsString() @MaxLength(200)
  resource_id?: string;

  @ApiPropertyOptional({ description: 'Only rows recorded at or after this time', format: 'date-time' })
  @IsOptional() @IsDateString({ strict: true }, { message: 'since must be an ISO 8601 time' })
  since?: string;
}
