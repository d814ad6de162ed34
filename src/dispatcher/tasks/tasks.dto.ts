import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform, Type } from 'class-transformer';
import {
  ArrayMaxSize, IsArray, IsBoolean, IsIn, IsInt, IsNotEmpty, IsObject, IsOptional, IsString, IsUrl, IsUUID, Max, MaxLength, Min,
  ValidateNested,
} from 'class-validator';
import { PageQueryDto, parseBooleanFlag } from '../../shared/http/page-query.dto';
import { MAX_TASK_SKILLS } from '../../shared/task-protocol/isolation';
import { IsRuntimeClass, TaskNetworkDto, TaskSecurityDto, TaskSkillDto } from '../../shared/task-protocol/isolation.dto';
import { PodAdditionsDto } from '../../shared/task-protocol/pod-additions';
import { IsSecretEnv, SECRET_ENV_DESCRIPTION } from '../../shared/task-protocol/secret-env';
import { IsEnvMap } from '../../shared/validation/maps';
import { IsQuantity } from '../../shared/validation/quantities';
import { TASK_STATUSES, TaskStatus } from './task-state';

export class RuntimeTargetDto {
  @ApiProperty({ enum: ['kubernetes', 'local'], description: 'One of the enabled backends', example: 'local' }) @IsString() @IsNotEmpty() type: string;
  @ApiPropertyOptional({ example: '' }) @IsOptional() @IsString() @MaxLength(63) namespace?: string;
}

export class ResourcesDto {
  @ApiProperty({ example: '500m' }) @IsQuantity('cpu') cpu: string;
  @ApiProperty({ example: '512Mi' }) @IsQuantity('memory') memory: string;
}

export class PortDto {
  @ApiProperty({ example: 8080 }) @IsInt() @Min(1) @Max(65535) container_port: number;
  @ApiPropertyOptional({ example: 'tcp', default: 'tcp' })
  @IsOptional()
  @Transform(({ value }) => (typeof value === 'string' ? value.toLowerCase() : value))
  @IsIn(['tcp', 'udp', 'sctp'], { message: 'protocol must be tcp, udp or sctp' })
  protocol?: string;
}

/** The seed's task creation request, with the additive pod fields of CONTRACT section 4. */
export class CreateTaskDto extends PodAdditionsDto {
  @ApiProperty({ format: 'uuid', example: '0b4c6f8e-3f1a-4d2b-9c7e-5a6b7c8d9e0f' }) @IsUUID('all', { message: 'task_id must be a UUID' }) task_id: string;
  @ApiProperty({ example: 'agent-examples/echo' }) @IsString() @IsNotEmpty() @MaxLength(512) agent_image: string;
  @ApiProperty({ type: RuntimeTargetDto }) @IsObject() @ValidateNested() @Type(() => RuntimeTargetDto) runtime_target: RuntimeTargetDto;
  @ApiPropertyOptional({ type: ResourcesDto }) @IsOptional() @IsObject() @ValidateNested() @Type(() => ResourcesDto) resources?: ResourcesDto;
  @ApiPropertyOptional({ example: { GREETING: 'hello' } }) @IsOptional() @IsEnvMap() env?: Record<string, string>;
  @ApiPropertyOptional({ type: [PortDto] }) @IsOptional() @ValidateNested({ each: true }) @Type(() => PortDto) ports?: PortDto[];
  @ApiPropertyOptional({ example: 'briefs/0b4c.json' }) @IsOptional() @IsString() @MaxLength(1024) brief_key?: string;
  @ApiProperty({ example: 'http://127.0.0.1:8000/api/v1/tasks/0b4c6f8e-3f1a-4d2b-9c7e-5a6b7c8d9e0f/callback/' })
  @IsUrl({ protocols: ['http', 'https'], require_protocol: true, require_tld: false }, { message: 'callback_url must be an http or https URL' })
  callback_url: string;
  @ApiProperty({ description: 'Sent back as Authorization: Bearer on the callback; never returned' })
  @IsString() @IsNotEmpty() @MaxLength(4096) callback_token: string;
  @ApiPropertyOptional({ example: 3600 }) @IsOptional() @IsInt() @Min(1) @Max(86400) timeout_seconds?: number;
  @ApiPropertyOptional({ type: [TaskSkillDto], description: 'Skill packages the agent may download' })
  @IsOptional() @IsArray() @ArrayMaxSize(MAX_TASK_SKILLS) @ValidateNested({ each: true }) @Type(() => TaskSkillDto) skills?: TaskSkillDto[];
  @ApiPropertyOptional({ example: 'gvisor' }) @IsRuntimeClass() runtime_class?: string;
  @ApiPropertyOptional({ type: TaskNetworkDto }) @IsOptional() @IsObject() @ValidateNested() @Type(() => TaskNetworkDto) network?: TaskNetworkDto;
  @ApiPropertyOptional({ type: TaskSecurityDto }) @IsOptional() @IsObject() @ValidateNested() @Type(() => TaskSecurityDto) security?: TaskSecurityDto;
  @ApiPropertyOptional({ description: SECRET_ENV_DESCRIPTION, example: { GITHUB_TOKEN: 'forge-credentials/token' } })
  @IsOptional() @IsSecretEnv() secret_env?: Record<string, string>;
}

export class ListTasksQuery extends PageQueryDto {
  @ApiPropertyOptional({ enum: TASK_STATUSES }) @IsOptional() @IsIn(TASK_STATUSES) status?: TaskStatus;
}

export class LogsQuery {
  @ApiPropertyOptional({ description: 'Only the last N lines', example: 100 })
  @IsOptional() @Type(() => Number) @IsInt() @Min(1) @Max(1_000_000) tail?: number;
  @ApiPropertyOptional({ description: 'Stream the output (chunked text/plain) until the task is final', example: true })
  @IsOptional() @Transform(({ value }) => parseBooleanFlag(value)) @IsBoolean({ message: 'follow must be true or false' }) follow?: boolean;
}
