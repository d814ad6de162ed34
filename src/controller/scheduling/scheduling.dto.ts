import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsInt, IsOptional, IsString, Max, MaxLength, Min, MinLength } from 'class-validator';
import { CONCURRENCY_STRATEGIES, ConcurrencyStrategy } from '../tasks/tasks.entity';

/**
 * `concurrency` of a workflow or of POST /tasks/ (CONTRACT 5, "Scheduling"): at most `limit`
 * tasks of one key dispatched or running at once, cluster-wide; `strategy` says what a new
 * task does when the key is full.
 */
export class ConcurrencyDto {
  @ApiPropertyOptional({
    description: 'The key tasks are counted by. On a workflow, a template over the event payload as the brief is; absent, the workflow id. On POST /tasks/, taken as given; absent, no concurrency unless the task has a workflow.',
    example: '{{payload.repository.full_name}}',
    maxLength: 500,
  })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(500)
  key?: string;

  @ApiProperty({ description: 'Tasks of one key dispatched or running at once', minimum: 1, maximum: 10000, example: 2 })
  @IsInt()
  @Min(1)
  @Max(10000)
  limit: number;

  @ApiPropertyOptional({
    enum: CONCURRENCY_STRATEGIES,
    default: 'queue',
    description: 'queue: the new task waits; cancel_in_progress: the oldest dispatched or running tasks of the key are cancelled down to the limit and a waiting one is replaced; cancel_newest: the new task is cancelled at once',
  })
  @IsOptional()
  @IsIn(CONCURRENCY_STRATEGIES, { message: `strategy must be one of ${CONCURRENCY_STRATEGIES.join(', ')}` })
  strategy?: ConcurrencyStrategy;
}
