import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  Allow,
  ArrayMaxSize,
  ArrayMinSize,
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
  ValidateBy,
  ValidateNested,
  ValidationOptions,
} from 'class-validator';
import { RUNTIME_TYPE_NAME } from '../../shared/task-protocol/task-request';
import { IsEnvMap, IsMapOf } from '../../shared/validation/maps';
import { TaskTemplateFieldsDto } from '../tasks/tasks.dto';
import { WEBHOOK_SOURCES } from '../webhooks/webhook-signatures';
import { badPlaceholders, FILTER_PATH } from './workflow-routing';
import { RetryPolicyDto } from '../scheduling/retry-policy.dto';

export const WORKFLOW_ID = /^[a-z0-9]+(-[a-z0-9]+)*$/;
/** Event names as senders write them: `push`, `pull_request`, `event_callback`, `invoice.paid`. */
export const EVENT_NAME = /^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,99}$/;
/** An OCI image reference: optional registry host, lower-case path, optional tag and digest. */
export const IMAGE_REFERENCE =
  /^([A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*(:\d{1,5})?\/)?[a-z0-9]+([._-]+[a-z0-9]+)*(\/[a-z0-9]+([._-]+[a-z0-9]+)*)*(:\w[\w.-]{0,127})?(@sha256:[a-f0-9]{64})?$/;
export const NAMESPACE = /^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)?$/;

const isScalar = (v: unknown) => v === null || ['string', 'number', 'boolean'].includes(typeof v);

export class TriggerDto {
  @ApiProperty({ enum: WEBHOOK_SOURCES, example: 'forge' })
  @IsIn(WEBHOOK_SOURCES, { message: `source must be one of ${WEBHOOK_SOURCES.join(', ')}` })
  source: string;

  @ApiProperty({ example: 'pull_request' })
  @IsString()
  @Matches(EVENT_NAME, { message: 'event must be an event name such as push, pull_request or event_callback' })
  event: string;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description: 'Dotted payload paths, each equal to a value (string, number, boolean or null) or matching a * glob',
    example: { action: 'opened', 'repository.full_name': 'acme/*' },
  })
  @IsOptional()
  @IsMapOf('isFilter', FILTER_PATH, isScalar, 'filter must map dotted payload paths (a.b.c) to a string, number, boolean or null')
  filter?: Record<string, string | number | boolean | null>;
}

export class WorkflowRuntimeTargetDto {
  @ApiProperty({ description: 'A runtime type some dispatcher offers (its `backends`): local, kubernetes, ...', example: 'local', pattern: RUNTIME_TYPE_NAME.source })
  @IsString()
  @Matches(RUNTIME_TYPE_NAME, { message: 'type must be a runtime type name (a-z, 0-9 and -, such as local or kubernetes)' })
  type: string;

  @ApiPropertyOptional({ description: "Empty: the dispatcher's KUBE_NAMESPACE", example: '' })
  @IsOptional()
  @IsString()
  @Matches(NAMESPACE, { message: 'namespace must be empty or a Kubernetes namespace name' })
  namespace?: string;
}

function IsBriefTemplate(options?: ValidationOptions) {
  return ValidateBy(
    {
      name: 'isBriefTemplate',
      validator: {
        validate: (brief: unknown) => badPlaceholders(brief).length === 0,
        defaultMessage: (args) => `brief placeholders must be {{payload}} or {{payload.a.b}} (not ${badPlaceholders(args?.value).join(', ')})`,
      },
    },
    options,
  );
}

/**
 * A workflow's task: POST /tasks/'s template fields, so an event never meets a template the
 * task service refuses. Its brief is a template over the payload, and a few fields are
 * held to the stricter rules below, which replace the inherited ones for that field
 * (class-validator prefers a subclass's checks of the same kind on the same property).
 */
export class WorkflowTaskTemplateDto extends TaskTemplateFieldsDto {
  @ApiProperty({ example: 'agent-examples/echo' })
  @IsString()
  @MaxLength(512)
  @Matches(IMAGE_REFERENCE, { message: 'agent_image must be an image reference such as agent-examples/echo or registry.example.com/agent:1.0' })
  declare agent_image: string;

  @ApiProperty({ type: WorkflowRuntimeTargetDto })
  @IsObject()
  @ValidateNested()
  @Type(() => WorkflowRuntimeTargetDto)
  declare runtime_target: WorkflowRuntimeTargetDto;

  @ApiPropertyOptional({ example: { GREETING: 'hello' } })
  @IsOptional()
  @IsEnvMap()
  declare env?: Record<string, string>;

  @ApiPropertyOptional({ example: { zone: 'eu' } })
  @IsOptional()
  @IsMapOf('isLabels', /^.{1,316}$/, (v) => typeof v === 'string', 'dispatcher_labels must be an object of string values')
  declare dispatcher_labels?: Record<string, string>;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description: 'Any JSON; strings may hold {{payload}} or {{payload.a.b}} placeholders, filled from the event',
    example: { prompt: 'Review {{payload.pull_request.html_url}}' },
  })
  @Allow()
  @IsOptional()
  @IsBriefTemplate()
  brief?: unknown;
}

/** The body of PUT /workflows/{id}/: everything but the id, which the path gives. */
export class WorkflowBodyDto {
  @ApiPropertyOptional({ example: 'Review pull requests' })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  name?: string;

  @ApiPropertyOptional({ example: true })
  @IsOptional()
  @IsBoolean()
  enabled?: boolean;

  @ApiPropertyOptional({ description: 'Lower numbers are tried first', example: 100 })
  @IsOptional()
  @IsInt()
  @Min(-1000000)
  @Max(1000000)
  priority?: number;

  @ApiProperty({ type: [TriggerDto] })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(50)
  @ValidateNested({ each: true })
  @Type(() => TriggerDto)
  triggers: TriggerDto[];

  @ApiProperty({ type: WorkflowTaskTemplateDto })
  @IsObject()
  @ValidateNested()
  @Type(() => WorkflowTaskTemplateDto)
  task_template: WorkflowTaskTemplateDto;

  @ApiPropertyOptional({ type: RetryPolicyDto, description: "The retry policy of the workflow's tasks; default {max_attempts: 3, backoff_seconds: 10, max_backoff_seconds: 600, on: [\"infra\"]}" })
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => RetryPolicyDto)
  retry?: RetryPolicyDto;
}

export class CreateWorkflowDto extends WorkflowBodyDto {
  @ApiProperty({ example: 'review-pull-requests' })
  @IsString()
  @MaxLength(100)
  @Matches(WORKFLOW_ID, { message: 'id must be a slug: lower-case letters, digits and single hyphens' })
  id: string;
}
