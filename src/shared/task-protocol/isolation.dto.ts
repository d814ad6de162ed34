import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize, IsArray, IsBoolean, IsIn, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min, ValidateBy,
  ValidateNested, ValidationOptions,
} from 'class-validator';
import ipaddr from 'ipaddr.js';
import { EGRESS_MODES, EgressMode, MAX_EGRESS_ALLOW, RUNTIME_CLASS_NAME } from './isolation';

/** An IPv4 or IPv6 CIDR block (`10.0.0.0/8`, `2001:db8::/32`), as ipaddr.js parses it. */
export function isCidr(value: unknown): boolean {
  if (typeof value !== 'string' || !value.includes('/')) return false;
  try {
    ipaddr.parseCIDR(value);
    return true;
  } catch {
    return false;
  }
}

function IsCidr(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy({ name: 'isCidr', validator: { validate: isCidr, defaultMessage: () => '$property must be a CIDR block such as 10.0.0.0/8 or 2001:db8::/32' } }, options);
}

export class EgressAllowDto {
  @ApiProperty({ example: '203.0.113.0/24' })
  @IsCidr()
  cidr: string;

  @ApiPropertyOptional({ description: 'TCP ports; omitted or empty: every port', type: [Number], example: [443] })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(32)
  @IsInt({ each: true })
  @Min(1, { each: true })
  @Max(65535, { each: true })
  ports?: number[];
}

export class TaskNetworkDto {
  @ApiPropertyOptional({ enum: EGRESS_MODES, description: "Omitted: the dispatcher's AGENT_EGRESS (dispatcher)" })
  @IsOptional()
  @IsIn(EGRESS_MODES, { message: `egress must be one of ${EGRESS_MODES.join(', ')}` })
  egress?: EgressMode;

  @ApiPropertyOptional({ type: [EgressAllowDto] })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(MAX_EGRESS_ALLOW)
  @ValidateNested({ each: true })
  @Type(() => EgressAllowDto)
  allow?: EgressAllowDto[];
}

/** The hardened defaults a task may relax; capabilities and privilege escalation are never given back. */
export class TaskSecurityDto {
  @ApiPropertyOptional({ description: "Omitted: the dispatcher's AGENT_RUN_AS_NON_ROOT (true)" })
  @IsOptional()
  @IsBoolean()
  run_as_non_root?: boolean;

  @ApiPropertyOptional({ description: "Omitted: the dispatcher's AGENT_RUN_AS_USER (65532)", example: 1000 })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(2147483647)
  run_as_user?: number;

  @ApiPropertyOptional({ description: "Omitted: the dispatcher's AGENT_READ_ONLY_ROOT_FILESYSTEM (true)" })
  @IsOptional()
  @IsBoolean()
  read_only_root_filesystem?: boolean;
}

/** A pinned skill version as the controller sends it in a task request. */
export class TaskSkillDto {
  @ApiProperty({ example: 'lint' }) @IsString() @Matches(/^[a-z0-9][a-z0-9-]{0,99}$/, { message: 'slug must be a skill slug' }) slug: string;
  @ApiProperty({ example: 2 }) @IsInt() @Min(1) @Max(2147483647) version_number: number;
  @ApiProperty({ example: 'e3b0c442...' }) @IsString() @Matches(/^[0-9a-f]{64}$/, { message: 'content_hash must be a SHA-256 in hex' }) content_hash: string;
  @ApiProperty({ example: 'skills/sha256/e3b0c442....zip' })
  @IsString()
  @MaxLength(1024)
  @Matches(/^skills\/sha256\/[0-9a-f]{64}\.zip$/, { message: 'storage_ref must be skills/sha256/<hash>.zip' })
  storage_ref: string;
}

/** Decorators for a task's `runtime_class`. */
export function IsRuntimeClass(): PropertyDecorator {
  return (target, key) => {
    IsOptional()(target, key);
    IsString()(target, key);
    MaxLength(253)(target, key);
    Matches(RUNTIME_CLASS_NAME, { message: 'runtime_class must be a RuntimeClass name (a-z, 0-9, - and .)' })(target, key);
  };
}
