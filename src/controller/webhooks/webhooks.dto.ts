import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, MaxLength } from 'class-validator';
import { KeysetPageQueryDto } from '../../shared/http/page-query.dto';
import { DELIVERY_OUTCOMES, DeliveryOutcome } from './webhook-delivery.entity';
import { WEBHOOK_SOURCES } from './webhook-signatures';

export class ListDeliveriesQueryDto extends KeysetPageQueryDto {
  @ApiPropertyOptional({ enum: WEBHOOK_SOURCES })
  @IsOptional()
  @IsString()
  @MaxLength(100)
  source?: string;

  @ApiPropertyOptional({ example: 'pull_request' })
  @IsOptional()
  @IsString()
  @MaxLength(100)
  event?: string;

  @ApiPropertyOptional({ enum: DELIVERY_OUTCOMES })
  @IsOptional()
  @IsIn(DELIVERY_OUTCOMES)
  outcome?: DeliveryOutcome;

  @ApiPropertyOptional({ description: 'A workflow id', example: 'review-pull-requests' })
  @IsOptional()
  @IsString()
  @MaxLength(100)
  workflow?: string;
}
