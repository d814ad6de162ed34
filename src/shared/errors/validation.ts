import { ValidationError, ValidationPipe } from '@nestjs/common';
import { DomainError, FieldErrors } from './domain-error';

/** Flattens class-validator errors into `{"runtime_target.type": ["..."]}`. */
export function fieldErrors(errors: ValidationError[], parent = ''): FieldErrors {
  const result: FieldErrors = {};
  for (const error of errors) {
    const field = parent ? `${parent}.${error.property}` : error.property;
    if (error.constraints) result[field] = Object.values(error.constraints);
    if (error.children?.length) Object.assign(result, fieldErrors(error.children, field));
  }
  return result;
}

/** The one global pipe: unknown fields dropped, types transformed, errors named by field. */
export function createValidationPipe(): ValidationPipe {
  return new ValidationPipe({
    whitelist: true,
    transform: true,
    forbidUnknownValues: false,
    exceptionFactory: (errors) => DomainError.invalid(fieldErrors(errors)),
  });
}
