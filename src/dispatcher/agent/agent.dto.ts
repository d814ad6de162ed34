import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsInt, IsObject, IsOptional, IsString, IsUUID, Max, MaxLength, Min } from 'class-validator';

export class CheckinDto {
  @ApiProperty() @IsUUID('all', { message: 'task_id must be a UUID' }) task_id: string;
}

export class ProgressDto {
  @ApiProperty() @IsUUID('all', { message: 'task_id must be a UUID' }) task_id: string;
  @ApiProperty({ minimum: 0, maximum: 100 })
  @IsInt({ message: 'percentage must be a whole number from 0 to 100' }) @Min(0) @Max(100)
  percentage: number;
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(4096) message?: string;
  @ApiPropertyOptional() @IsOptional() @IsObject() data?: Record<string, unknown>;
}

export class CheckbackDto {
  @ApiProperty() @IsUUID('all', { message: 'task_id must be a UUID' }) task_id: string;
  @ApiProperty({ enum: ['completed', 'failed'] }) @IsIn(['completed', 'failed'], { message: 'status must be completed or failed' })
  status: 'completed' | 'failed';
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(1024) result_key?: string;
  @ApiPropertyOptional() @IsOptional() @IsObject() result_metadata?: Record<string, unknown>;
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(65536) error?: string;
}
