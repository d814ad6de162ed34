import { applyDecorators } from '@nestjs/common';
import { IsInt, Max, Min } from 'class-validator';

export const INT32_MIN = -2_147_483_648;
export const INT32_MAX = 2_147_483_647;

/**
 * A whole number a PostgreSQL `integer` column (and OFFSET) can hold: a bigger one is a 400
 * naming the field, never an "out of range" error from the database.
 */
export function IsInt32(min = INT32_MIN, max = INT32_MAX) {
  return applyDecorators(IsInt(), Min(min), Max(max));
}
