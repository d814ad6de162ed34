import { IsInt32 } from '../../shared/validation/int32';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, IsArray, IsInt, IsOptional, IsString, IsUrl, IsUUID, Max, MaxLength, Min, MinLength } from 'class-validator';
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
}

/** An operator's re-binding of a dispatcher's name. */
export class DispatcherRebindDto {
  @ApiPropertyOptional({ description: 'The OAuth client that may check in under this name from now on; none: whoever checks in next' })
  @IsOptional()
  @IsUUID()
  client_id?: string;
}
