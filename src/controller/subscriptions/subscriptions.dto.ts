import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsBoolean,
  IsDateString,
  IsIn,
  IsOptional,
  IsString,
  MaxLength,
  ValidateBy,
  ValidateNested,
} from 'class-validator';
import { KeysetPageQueryDto } from '../../shared/http/page-query.dto';
import { DELIVERY_STATES, DeliveryState, SUBSCRIPTION_EVENT_TYPES, SubscriptionEventType } from './subscriptions.entity';

const isStatusFilter = (value: unknown) =>
  (typeof value === 'string' && value.length > 0 && value.length <= 64)
  || (Array.isArray(value) && value.length > 0 && value.length <= 20 && value.every((item) => typeof item === 'string' && item.length > 0 && item.length <= 64));

export class SubscriptionFilterDto {
  @ApiPropertyOptional({ description: 'Only events of tasks this workflow created', example: 'review-pull-requests' })
  @IsOptional() @IsString() @MaxLength(200)
  workflow_id?: string;

  @ApiPropertyOptional({ description: 'Only events whose status is this one (or one of these)', oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }], example: 'completed' })
  @IsOptional()
  @ValidateBy({ name: 'isStatusFilter', validator: { validate: isStatusFilter, defaultMessage: () => 'status must be a status or a list of statuses' } })
  status?: string | string[];
}

class SubscriptionFieldsDto {
  @ApiPropertyOptional({ description: 'Free text for people', example: 'orchestrator endings' })
  @IsOptional() @IsString() @MaxLength(1000)
  description?: string;

  @ApiPropertyOptional({ default: true })
  @IsOptional() @IsBoolean({ message: 'enabled must be true or false' })
  enabled?: boolean;

  @ApiPropertyOptional({ type: SubscriptionFilterDto })
  @IsOptional() @ValidateNested() @Type(() => SubscriptionFilterDto)
  filter?: SubscriptionFilterDto;
}

const eventTypes = { isArray: true, enum: [...SUBSCRIPTION_EVENT_TYPES], example: ['task.finished'] };

export class CreateSubscriptionDto extends SubscriptionFieldsDto {
  @ApiProperty({ description: 'Where events are POSTed: https (http outside production)', example: 'https://orchestrator.example.com/hooks/tasks' })
  @IsString() @MaxLength(2000)
  url: string;

  @ApiProperty(eventTypes)
  @IsArray() @ArrayMinSize(1) @ArrayMaxSize(SUBSCRIPTION_EVENT_TYPES.length)
  @IsIn(SUBSCRIPTION_EVENT_TYPES, { each: true, message: `event_types must hold only ${SUBSCRIPTION_EVENT_TYPES.join(', ')}` })
  event_types: SubscriptionEventType[];
}

export class UpdateSubscriptionDto extends SubscriptionFieldsDto {
  @ApiPropertyOptional({ example: 'https://orchestrator.example.com/hooks/tasks' })
  @IsOptional() @IsString() @MaxLength(2000)
  url?: string;

  @ApiPropertyOptional(eventTypes)
  @IsOptional() @IsArray() @ArrayMinSize(1) @ArrayMaxSize(SUBSCRIPTION_EVENT_TYPES.length)
  @IsIn(SUBSCRIPTION_EVENT_TYPES, { each: true, message: `event_types must hold only ${SUBSCRIPTION_EVENT_TYPES.join(', ')}` })
  event_types?: SubscriptionEventType[];
}

export class ReplaySinceDto {
  @ApiProperty({ description: 'Every event of this subscription from this time on is sent again (events still kept: EVENT_RETENTION_HOURS)', format: 'date-time' })
  @IsDateString({ strict: true }, { message: 'since must be an ISO 8601 time' })
  since: string;
}

export class ListDeliveriesQueryDto extends KeysetPageQueryDto {
  @ApiPropertyOptional({ enum: DELIVERY_STATES })
  @IsOptional() @IsIn(DELIVERY_STATES, { message: `status must be one of ${DELIVERY_STATES.join(', ')}` })
  status?: DeliveryState;
}
