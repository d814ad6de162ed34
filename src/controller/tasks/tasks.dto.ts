import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform, Type } from 'class-transformer';
import {
  Allow,
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
  MinLength,
  ValidateNested,
} from 'class-validator';
import { KeysetPageQueryDto, parseBooleanFlag } from '../../shared/http/page-query.dto';
import { IsRuntimeClass, TaskNetworkDto, TaskSecurityDto } from '../../shared/task-protocol/isolation.dto';
import { RUNTIME_TYPE_NAME } from '../../shared/task-protocol/task-request';
import { IsStringMap } from '../../shared/validation/maps';
import { PodAdditionsDto } from '../../shared/task-protocol/pod-additions';
import { IsSecretEnv, SECRET_ENV_DESCRIPTION } from '../../shared/task-protocol/secret-env';
import { IsInt32 } from '../../shared/validation/int32';
import { IsQuantity } from '../../shared/validation/quantities';
import { ConcurrencyDto } from '../scheduling/scheduling.dto';
import { RetryPolicyDto } from '../scheduling/retry-policy.dto';
import { TASK_STATUSES, TaskStatus } from './tasks.entity';

export const SKILL_REFERENCE = /^[a-z0-9][a-z0-9-]*(@[1-9]\d*)?$/;

export class RuntimeTargetDto {
  @ApiProperty({ description: 'A runtime type some dispatcher offers (its `backends`): local, kubernetes, ...', example: 'local', pattern: RUNTIME_TYPE_NAME.source })
  @IsString()
  @Matches(RUNTIME_TYPE_NAME, { message: 'type must be a runtime type name (a-z, 0-9 and -, such as local or kubernetes)' })
  type: string;

  @ApiPropertyOptional({ example: '' })
  @IsOptional()
  @IsString()
  @MaxLength(253)
  namespace?: string;
}

export class ResourcesDto {
  @ApiProperty({ example: '500m' })
  @IsString()
  @IsQuantity('cpu')
  cpu: string;

  @ApiProperty({ example: '512Mi' })
  @IsString()
  @IsQuantity('memory')
  memory: string;
}

export class PortDto {
  @ApiProperty({ example: 8080 })
  @IsInt()
  @Min(1)
  @Max(65535)
  container_port: number;

  @ApiPropertyOptional({ example: 'tcp' })
  @IsOptional()
  @IsIn(['tcp', 'udp', 'sctp', 'TCP', 'UDP', 'SCTP'])
  protocol?: string;
}

/**
 * The task template fields (CONTRACT "Workflows and controller tasks") that POST /tasks/
 * and a workflow's `task_template` share; each adds its own kind of brief.
 */
export class TaskTemplateFieldsDto extends PodAdditionsDto {
  @ApiProperty({ example: 'agent-examples/echo' })
  @IsString()
  @MinLength(1)
  @MaxLength(512)
  agent_image: string;

  @ApiProperty()
  @IsObject()
  @ValidateNested()
  @Type(() => RuntimeTargetDto)
  runtime_target: RuntimeTargetDto;

  @ApiPropertyOptional()
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => ResourcesDto)
  resources?: ResourcesDto;

  @ApiPropertyOptional({ example: { GREETING: 'hello' } })
  @IsOptional()
  @IsStringMap()
  env?: Record<string, string>;

  @ApiPropertyOptional({ description: SECRET_ENV_DESCRIPTION, example: { GITHUB_TOKEN: 'forge-credentials/token' } })
  @IsOptional()
  @IsSecretEnv()
  secret_env?: Record<string, string>;

  @ApiPropertyOptional({ type: [PortDto] })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(64)
  @ValidateNested({ each: true })
  @Type(() => PortDto)
  ports?: PortDto[];

  @ApiPropertyOptional({ example: ['summarise', 'lint@2'] })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(100)
  @IsString({ each: true })
  @Matches(SKILL_REFERENCE, { each: true, message: 'each skill must be "slug" or "slug@N"' })
  skills?: string[];

  @ApiPropertyOptional({ example: 600 })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(86400)
  timeout_seconds?: number;

  @ApiPropertyOptional({ example: { zone: 'eu' } })
  @IsOptional()
  @IsStringMap()
  dispatcher_labels?: Record<string, string>;

  @ApiPropertyOptional({ description: 'Higher is claimed first by the dispatch loop', minimum: -1000, maximum: 1000, default: 0, example: 0 })
  @IsOptional()
  @IsInt()
  @Min(-1000)
  @Max(1000)
  priority?: number;

  @ApiPropertyOptional({ description: "The agent pod's runtimeClassName (gVisor, Kata, ...); omitted: the dispatcher's AGENT_RUNTIME_CLASS", example: 'gvisor' })
  @IsRuntimeClass()
  runtime_class?: string;

  @ApiPropertyOptional({ type: TaskNetworkDto })
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => TaskNetworkDto)
  network?: TaskNetworkDto;

  @ApiPropertyOptional({ type: TaskSecurityDto })
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => TaskSecurityDto)
  security?: TaskSecurityDto;
}

/** The body of POST /tasks/ (and a workflow's `task_template` once its brief is rendered). */
export class TaskTemplateDto extends TaskTemplateFieldsDto {
  /** Any JSON; stored in object storage as `briefs/<guid>.json`. */
  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'Any JSON; stored as briefs/<guid>.json', example: { prompt: 'Summarise the pull request' } })
  @Allow()
  @IsOptional()
  brief?: unknown;

  @ApiPropertyOptional({ example: 'briefs/example.json' })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(1024)
  brief_key?: string;

  /** A dispatcher slug: only that dispatcher may run the task. */
  @ApiPropertyOptional({ example: 'local' })
  @IsOptional()
  @IsString()
  @MaxLength(100)
  dispatcher?: string;

  @ApiPropertyOptional({ type: ConcurrencyDto })
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => ConcurrencyDto)
  concurrency?: ConcurrencyDto;
  @ApiPropertyOptional({ type: RetryPolicyDto, description: 'Which endings are tried again; default {max_attempts: 3, backoff_seconds: 10, max_backoff_seconds: 600, on: ["infra"]}' })
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => RetryPolicyDto)
  retry?: RetryPolicyDto;
}

export class TaskLogsQueryDto {
  @ApiPropertyOptional({ description: 'Only the last N lines', example: 100 })
  @IsOptional() @Type(() => Number) @IsInt() @Min(1) @Max(1_000_000) tail?: number;

  @ApiPropertyOptional({ description: 'Stream the output (chunked text/plain) until the task is final, then end', example: true })
  @IsOptional() @Transform(({ value }) => parseBooleanFlag(value)) @IsBoolean({ message: 'follow must be true or false' }) follow?: boolean;
}

export class ListTasksQueryDto extends KeysetPageQueryDto {
  @ApiPropertyOptional({ enum: TASK_STATUSES })
  @IsOptional()
  @IsIn(TASK_STATUSES)
  status?: TaskStatus;

  @ApiPropertyOptional({ example: 'nightly-review' })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  workflow?: string;

  @ApiPropertyOptional({ description: 'true: only dead letters (failed or timed_out, not to be tried again, not re-run)', example: true })
  @IsOptional()
  @Transform(({ value }) => parseBooleanFlag(value))
  @IsBoolean({ message: 'dead_letter must be true or false' })
  dead_letter?: boolean;
}

/** The seed's task callback body. */
export class TaskCallbackDto {
  @ApiProperty({ enum: ['completed', 'failed', 'timed_out'] })
  @IsIn(['completed', 'failed', 'timed_out'])
  status: 'completed' | 'failed' | 'timed_out';

  @ApiPropertyOptional({ type: 'integer', format: 'int32', nullable: true, example: 0 })
  @IsOptional()
  @IsInt32()
  exit_code?: number | null;

  @ApiPropertyOptional({ type: String, nullable: true, example: 'results/<task_id>/result.json' })
  @IsOptional()
  @IsString()
  @MaxLength(1024)
  result_key?: string | null;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, nullable: true, example: {} })
  @IsOptional()
  @IsObject()
  result_metadata?: Record<string, unknown> | null;

  @ApiPropertyOptional({ type: String, nullable: true, example: '' })
  @IsOptional()
  @IsString()
  error_message?: string | null;
}

export class TaskProgressDto {
  @ApiPropertyOptional({ type: 'integer', minimum: 0, maximum: 100, nullable: true, example: 50 })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(100)
  percentage?: number | null;

  @ApiPropertyOptional({ type: String, nullable: true, maxLength: 4096, example: 'brief read' })
  @IsOptional()
  @IsString()
  @MaxLength(4096)
  message?: string | null;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, nullable: true, example: {} })
  @IsOptional()
  @IsObject()
  data?: Record<string, unknown> | null;
}
