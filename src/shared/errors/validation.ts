import { ArgumentMetadata, ValidationError, ValidationPipe, ValidationPipeOptions } from '@nestjs/common';
import { hideReservedKeys, restoreReservedKeys } from '../validation/reserved-keys';
import { acceptPlain } from '../validation/plain-acceptance';
import { keepRuleLookups } from '../validation/rule-lookup';
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
  constructor(options: ValidationPipeOptions, private readonly plainAcceptance: boolean) {
    super(options);
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (metadata.type !== 'body') return super.transform(value, metadata);
    // Most bodies pass: those the rules can be run on directly skip the pipe's copies and error trees.
    const accepted = this.plainAcceptance && metadata.metatype ? acceptPlain(metadata.metatype as new () => object, value) : undefined;
    if (accepted) return accepted;
    return restoreReservedKeys(await super.transform(hideReservedKeys(value), metadata));
  }
}

const VALIDATOR_OPTIONS = { whitelist: true, forbidUnknownValues: false } as const;

/** `plainAcceptance: false` leaves every body to the pipe itself: the reference the fast path is compared with. */
export function createValidationPipe({ plainAcceptance = true } = {}): ValidationPipe {
  keepRuleLookups();
  return new BodyValidationPipe({
    ...VALIDATOR_OPTIONS,
    transform: true,
    exceptionFactory: (errors) => DomainError.invalid(fieldErrors(errors)),
  }, plainAcceptance);
}

/**
 * A JSON body checked by the global pipe itself (same options, same reserved keys, same 400),
 * for the hot lane, which has no Nest pipe around its handlers. A second, lighter check here
 * answered differently on bodies the pipe treats specially (an array, a primitive): one
 * definition keeps the two paths equal (test/e2e/hot-lane-differential.e2e-spec.ts).
 */
const LANE_PIPE = createValidationPipe();

export async function validateBody<T extends object>(metatype: new () => T, body: unknown): Promise<T> {
  return (await LANE_PIPE.transform(body, { type: 'body', metatype })) as T;
}
