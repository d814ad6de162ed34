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
  ValidateIf,
  ValidateNested,
  ValidationOptions,
} from 'class-validator';
import { RUNTIME_TYPE_NAME } from '../../shared/task-protocol/task-request';
import { IsEnvMap, IsMapOf } from '../../shared/validation/maps';
import { CATCH_UP_MODES, DEFAULT_TIME_ZONE, MAX_CRON_LENGTH, SCHEDULE_SOURCE } from '../schedules/schedule-trigger';
import { IsCronPattern, isScheduleSource, IsTimeZone, OnlyForTriggerKind } from '../schedules/schedule-validation';
import { ConcurrencyDto } from '../scheduling/scheduling.dto';
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

const TRIGGER_SOURCES = [...WEBHOOK_SOURCES, SCHEDULE_SOURCE];

/** A webhook trigger (`source`, `event`, `filter`) or a schedule trigger (`source: "schedule"`, `cron`, `timezone`, `catch_up`). */
export class TriggerDto {
  @ApiProperty({ enum: TRIGGER_SOURCES, example: 'forge' })
  @IsIn(TRIGGER_SOURCES, { message: `source must be one of ${TRIGGER_SOURCES.join(', ')}` })
  source: string;

  @ApiPropertyOptional({ description: 'Required for a webhook source; a schedule trigger takes none', example: 'pull_request' })
  @ValidateIf((trigger: TriggerDto) => !isScheduleSource(trigger) || trigger.event !== undefined)
  @OnlyForTriggerKind('event', false)
  @IsString()
  @Matches(EVENT_NAME, { message: 'event must be an event name such as push, pull_request or event_callback' })
  event?: string;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description: 'Dotted payload paths, each equal to a value (string, number, boolean or null) or matching a * glob; not for a schedule trigger',
    example: { action: 'opened', 'repository.full_name': 'acme/*' },
  })
  @IsOptional()
  @OnlyForTriggerKind('filter', false)
  @IsMapOf('isFilter', FILTER_PATH, isScalar, 'filter must map dotted payload paths (a.b.c) to a string, number, boolean or null')
  filter?: Record<string, string | number | boolean | null>;

  @ApiPropertyOptional({
    description: 'Schedule triggers: a cron pattern of 5 fields (minute hour day month weekday) or 6 (seconds first)',
    example: '0 3 * * 1-5',
    maxLength: MAX_CRON_LENGTH,
  })
  @ValidateIf((trigger: TriggerDto) => isScheduleSource(trigger) || trigger.cron !== undefined)
  @OnlyForTriggerKind('cron', true)
  @IsCronPattern()
  cron?: string;

  @ApiPropertyOptional({ description: 'Schedule triggers: the IANA time zone the pattern is read in', default: DEFAULT_TIME_ZONE, example: 'Europe/Berlin' })
  @IsOptional()
  @OnlyForTriggerKind('timezone', true)
  @IsTimeZone()
  timezone?: string;

  @ApiPropertyOptional({
    enum: CATCH_UP_MODES,
    default: 'latest',
    description: 'Schedule triggers: after downtime, make the most recent missed tick once (latest) or skip missed ticks (none)',
  })
  @IsOptional()
  @OnlyForTriggerKind('catch_up', true)
  @IsIn(CATCH_UP_MODES, { message: `catch_up must be one of ${CATCH_UP_MODES.join(', ')}` })
  catch_up?: string;
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
        defaultMessage: (args) => `brief placeholders must be {{payload}}, {{payload.a.b}}, {{schedule.time}} or {{schedule.previous_time}} (not ${badPlaceholders(args?.value).join(', ')})`,
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
    description: 'Any JSON; strings may hold {{payload}} or {{payload.a.b}} placeholders, filled from the event, and {{schedule.time}} or {{schedule.previous_time}}, filled by a schedule tick (RFC 3339, UTC)',
    example: { prompt: 'Review {{payload.pull_request.html_url}}' },
  })
  @Allow()
  @IsOptional()
  @IsBriefTemplate()
  brief?: unknown;
}

/** A workflow's `concurrency`: its key is a template over the event payload, as the brief is. */
export class WorkflowConcurrencyDto extends ConcurrencyDto {
  @ApiPropertyOptional({ description: 'A template over the event payload ({{payload.a.b}}); absent, the workflow id', example: '{{payload.repository.full_name}}', maxLength: 500 })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(500)
  @IsBriefTemplate({ message: 'key placeholders must be {{payload}} or {{payload.a.b}}' })
  declare key?: string;
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

  @ApiPropertyOptional({ type: WorkflowConcurrencyDto })
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => WorkflowConcurrencyDto)
  concurrency?: WorkflowConcurrencyDto;

  @ApiPropertyOptional({ description: "The workflow's share of dispatches against other fairness groups of equal priority", minimum: 1, maximum: 100, default: 1, example: 1 })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(100)
  weight?: number;

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
