import { IsInt32 } from '../validation/int32';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, Max, Min, Validate, ValidatorConstraint, ValidatorConstraintInterface } from 'class-validator';
import { decodeCursor, EXACT_COUNT_LIMIT } from '../database/keyset-page';

@ValidatorConstraint({ name: 'pageCursor' })
class IsPageCursor implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return typeof value === 'string' && decodeCursor(value) !== null;
  }

  defaultMessage(): string {
    return 'is not a cursor from this list: copy it from a page\'s next or previous link';
  }
}

/** `?limit=&offset=` of a list endpoint; `pageRequest` fills in the defaults. */
export class PageQueryDto {
  @ApiPropertyOptional({ example: 50 })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(500)
  limit?: number;

  @ApiPropertyOptional({ example: 0 })
  @IsOptional()
  @Type(() => Number)
  @IsInt32(0)
  offset?: number;
}

/**
 * `?cursor=` (from a page's `next` or `previous`) and `?count=exact` on the lists that page
 * by key; `offset` is still accepted when no cursor is given.
 */
export class KeysetPageQueryDto extends PageQueryDto {
  @ApiPropertyOptional({ description: 'Opaque: copied from a page\'s next or previous link' })
  @IsOptional()
  @IsString()
  @Validate(IsPageCursor)
  cursor?: string;

  @ApiPropertyOptional({
    enum: ['exact'],
    description: `Count every matching row; by default a count past ${EXACT_COUNT_LIMIT} is the database's estimate (count_estimated: true)`,
  })
  @IsOptional()
  @IsIn(['exact'])
  count?: 'exact';
}

/** A query flag: `true`/`1` and `false`/`0` become booleans; anything else stays as given, for the validator to refuse. */
export function parseBooleanFlag(value: unknown): unknown {
  if (value === 'true' || value === '1' || value === true) return true;
  if (value === 'false' || value === '0' || value === false) return false;
  return value;
}
