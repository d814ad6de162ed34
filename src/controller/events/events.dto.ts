import { ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsUUID, Min } from 'class-validator';

export class EventsQueryDto {
  @ApiPropertyOptional({ description: 'Only the events of this task', format: 'uuid' })
  @IsOptional() @IsUUID('all', { message: 'task_guid must be a UUID' }) task_guid?: string;

  @ApiPropertyOptional({ description: 'Resume after this event id (as the Last-Event-ID header does)', example: 120 })
  @IsOptional() @Type(() => Number) @IsInt() @Min(0) last_event_id?: number;
}
