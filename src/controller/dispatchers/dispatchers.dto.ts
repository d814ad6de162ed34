import { IsInt32 } from '../../shared/validation/int32';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, IsArray, IsInt, IsOptional, IsString, IsUrl, IsUUID, Max, MaxLength, Min, MinLength, ValidateNested } from 'class-validator';
import { Type } from 'class-transformer';
import { IsStringMap } from '../../shared/validation/maps';

/** The seed's dispatcher registration, plus the `api_key` the controller should call it with. */
export class DispatcherCheckinDto {
  @ApiProperty({ example: 'local' })
  @IsString()
  @MinLength(1)
  @MaxLength(100)
  name: string;

  @ApiProperty({ example: 'http://127.0.0.1:8080' })
  @IsUrl({ protocols: ['http', 'https'], require_protocol: true, require_tld: false })
  @MaxLength(2048)
  endpoint_url: string;

  @ApiPropertyOptional({ example: 'local' })
  @IsOptional()
  @IsString()
  @MaxLength(100)
  cloud?: string;

  @ApiProperty({ example: ['local'] })
  @IsArray()
  @ArrayMaxSize(20)
  @IsString({ each: true })
  @MinLength(1, { each: true })
  @MaxLength(64, { each: true })
  backends: string[];

  @ApiPropertyOptional({ example: { zone: 'eu' } })
  @IsOptional()
  @IsStringMap()
  labels?: Record<string, string>;

  @ApiPropertyOptional({ example: 30 })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(3600)
  heartbeat_interval_seconds?: number;

  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(1024)
  api_key?: string;
}

/** One warm pool as a dispatcher's heartbeat reports it (CONTRACT section 5, "Warm pools": pool state in the console). */
export class WarmPoolStateDto {
  @ApiProperty({ example: 'reviewers' })
  @IsString()
  @MaxLength(100)
  name: string;

  @ApiProperty({ example: 'local' })
  @IsString()
  @MaxLength(40)
  backend: string;

  @ApiProperty({ example: 'agent-examples/echo' })
  @IsString()
  @MaxLength(1024)
  image: string;

  @ApiProperty({ example: 4, description: 'The size the pool is kept at' })
  @IsInt32(0)
  size: number;

  @ApiProperty({ example: 3, description: 'Agents booted and waiting for a task' })
  @IsInt32(0)
  idle: number;

  @ApiProperty({ example: 1, description: 'Agents given a task that have not finished it' })
  @IsInt32(0)
  claimed: number;
}

export class DispatcherHeartbeatDto {
  @ApiProperty()
  @IsUUID()
  dispatcher_guid: string;

  @ApiProperty({ example: 2 })
  @IsInt32(0)
  active_tasks: number;

  @ApiProperty({ example: 10 })
  @IsInt32(0)
  capacity: number;

  @ApiPropertyOptional({ type: [WarmPoolStateDto], description: "The dispatcher's warm pools now; absent leaves the last report" })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(100)
  @ValidateNested({ each: true })
  @Type(() => WarmPoolStateDto)
  warm_pools?: WarmPoolStateDto[];
}

/** An operator's re-binding of a dispatcher's name. */
export class DispatcherRebindDto {
  @ApiPropertyOptional({ description: 'The OAuth client that may check in under this name from now on; none: whoever checks in next' })
  @IsOptional()
  @IsUUID()
  client_id?: string;
}
