import { ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsIn, IsInt, IsOptional, Max, Min } from 'class-validator';
import { DEFAULT_RETRY_POLICY, RETRY_REASONS, RetryReason } from './retry-policy';

/** A workflow's or a task's `retry` (CONTRACT section 5); a field left out takes the default. */
export class RetryPolicyDto {
  @ApiPropertyOptional({ description: 'Attempts in all, the first included; 1 retries nothing', minimum: 1, maximum: 20, example: DEFAULT_RETRY_POLICY.max_attempts })
  @IsOptional() @IsInt() @Min(1) @Max(20)
  max_attempts?: number;

  @ApiPropertyOptional({ description: 'The longest wait before the second attempt; doubled for each later one (full jitter)', minimum: 1, maximum: 3600, example: DEFAULT_RETRY_POLICY.backoff_seconds })
  @IsOptional() @IsInt() @Min(1) @Max(3600)
  backoff_seconds?: number;

  @ApiPropertyOptional({ description: 'The cap on that wait', minimum: 1, maximum: 86400, example: DEFAULT_RETRY_POLICY.max_backoff_seconds })
  @IsOptional() @IsInt() @Min(1) @Max(86400)
  max_backoff_seconds?: number;

  @ApiPropertyOptional({
    description: 'Endings tried again: infra (the agent never got to run), timed_out, failed (the agent\'s own failure)',
    type: [String], enum: RETRY_REASONS, example: DEFAULT_RETRY_POLICY.on,
  })
  @IsOptional() @IsArray() @ArrayMinSize(0) @ArrayMaxSize(3) @IsIn(RETRY_REASONS, { each: true, message: 'each of on must be infra, timed_out or failed' })
  on?: RetryReason[];
}
