import { ArgumentMetadata, ValidationError, ValidationPipe } from '@nestjs/common';
import { hideReservedKeys, restoreReservedKeys } from '../validation/reserved-keys';
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

/**
 * The one global pipe: unknown fields dropped, types transformed, errors named by field.
 * Free-form JSON keeps every key, `constructor` and `__proto__` included (reserved-keys.ts).
 */
class BodyValidationPipe extends ValidationPipe {
  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (metadata.type !== 'body') return super.transform(value, metadata);
    return restoreReservedKeys(await super.transform(hideReservedKeys(value), metadata));
  }
}

export function createValidationPipe(): ValidationPipe {
  return new BodyValidationPipe({
    whitelist: true,
    transform: true,
    forbidUnknownValues: false,
    exceptionFactory: (errors) => DomainError.invalid(fieldErrors(errors)),
  });
}
