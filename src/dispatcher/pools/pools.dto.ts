import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, IsUUID, Max, MaxLength, Min } from 'class-validator';

export class ClaimDto {
  @ApiProperty({ description: 'The pool the agent belongs to (its AGENT_POOL)' })
  @IsString({ message: 'pool must be a string' }) @MaxLength(63)
  pool: string;

  @ApiProperty({ description: 'The agent (its AGENT_ID)' })
  @IsUUID('all', { message: 'agent_id must be a UUID' })
  agent_id: string;
}

export class ClaimQueryDto {
  @ApiPropertyOptional({ minimum: 0, maximum: 55, default: 25, description: 'How long to wait for a task, in seconds' })
  @IsOptional() @Type(() => Number) @IsInt({ message: 'wait_seconds must be a whole number from 0 to 55' }) @Min(0) @Max(55)
  wait_seconds?: number;
}
