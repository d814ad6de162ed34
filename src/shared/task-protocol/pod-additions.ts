import { ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsIn, IsInt, IsOptional, IsString, Matches, MaxLength, Min, ValidateNested } from 'class-validator';
import { IsStringMap } from '../validation/maps';

/** A Kubernetes toleration, in Kubernetes's own field names. */
export interface PodToleration {
  key?: string;
  operator?: 'Exists' | 'Equal';
  value?: string;
  effect?: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
  tolerationSeconds?: number;
}

/**
 * What a task may add to its agent pod (CONTRACT section 4, "Kubernetes in production"),
 * within what the dispatcher allows (KUBE_TASK_* settings); other backends ignore them.
 */
export interface PodAdditions {
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  node_selector?: Record<string, string>;
  tolerations?: PodToleration[];
  priority_class?: string;
}

export const POD_ADDITION_FIELDS = ['labels', 'annotations', 'node_selector', 'tolerations', 'priority_class'] as const;

/** The fields a request set (an omitted or empty one is left out, so older requests read and digest as before). */
export function podAdditionsOf(source: PodAdditions): PodAdditions {
  const additions: PodAdditions = {};
  for (const field of POD_ADDITION_FIELDS) {
    const value = source[field];
    const empty = value === undefined || value === null || value === '' || (typeof value === 'object' && Object.keys(value).length === 0);
    if (!empty) (additions as Record<string, unknown>)[field] = structuredClone(value);
  }
  return additions;
}

export class TolerationDto implements PodToleration {
  @ApiPropertyOptional({ example: 'dedicated' }) @IsOptional() @IsString() @MaxLength(316) key?: string;
  @ApiPropertyOptional({ enum: ['Exists', 'Equal'] }) @IsOptional() @IsIn(['Exists', 'Equal']) operator?: 'Exists' | 'Equal';
  @ApiPropertyOptional({ example: 'agents' }) @IsOptional() @IsString() @MaxLength(63) value?: string;
  @ApiPropertyOptional({ enum: ['NoSchedule', 'PreferNoSchedule', 'NoExecute'] })
  @IsOptional() @IsIn(['NoSchedule', 'PreferNoSchedule', 'NoExecute']) effect?: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
  @ApiPropertyOptional({ example: 300 }) @IsOptional() @IsInt() @Min(0) tolerationSeconds?: number;
}

/** The additive pod fields of a task request and a task template. */
export class PodAdditionsDto implements PodAdditions {
  @ApiPropertyOptional({ description: 'Labels added to the agent pod (keys the dispatcher allows)', example: { 'team.example.com/name': 'ml' } })
  @IsOptional() @IsStringMap() labels?: Record<string, string>;

  @ApiPropertyOptional({ description: 'Annotations added to the agent pod (keys the dispatcher allows)' })
  @IsOptional() @IsStringMap() annotations?: Record<string, string>;

  @ApiPropertyOptional({ description: 'nodeSelector entries (keys the dispatcher allows)', example: { 'node.example.com/pool': 'gpu' } })
  @IsOptional() @IsStringMap() node_selector?: Record<string, string>;

  @ApiPropertyOptional({ type: [TolerationDto], description: 'Tolerations (keys the dispatcher allows)' })
  @IsOptional() @IsArray() @ArrayMaxSize(32) @ValidateNested({ each: true }) @Type(() => TolerationDto) tolerations?: TolerationDto[];

  @ApiPropertyOptional({ description: 'priorityClassName (one the dispatcher allows)', example: 'batch-low' })
  @IsOptional() @IsString() @MaxLength(253) @Matches(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, { message: 'priority_class must be a Kubernetes object name' }) priority_class?: string;
}
