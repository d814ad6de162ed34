import { ValidateBy, ValidationOptions } from 'class-validator';

/** Environment variable names as both roles accept them in a task's `env`. */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

const ANY_KEY = /^/;

const isString = (value: unknown): value is string => typeof value === 'string';

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return !!value && typeof value === 'object' && !Array.isArray(value);
}

/**
 * A JSON object whose keys match `key` and whose values pass `value`; `message` may name
 * the field as `$property`.
 */
export function IsMapOf(name: string, key: RegExp, value: (v: unknown) => boolean, message: string, options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name,
      validator: {
        validate: (map: unknown) => isPlainObject(map) && Object.entries(map).every(([k, v]) => key.test(k) && value(v)),
        defaultMessage: () => message,
      },
    },
    options,
  );
}

/** A JSON object whose values are all strings (`env`, `dispatcher_labels`, a dispatcher's `labels`). */
export function IsStringMap(options?: ValidationOptions): PropertyDecorator {
  return IsMapOf('isStringMap', ANY_KEY, isString, '$property must be an object of string values', options);
}

/** A task's `env`: variable names to strings. */
export function IsEnvMap(options?: ValidationOptions): PropertyDecorator {
  return IsMapOf('isEnvMap', ENV_NAME, isString, '$property must map variable names (letters, digits and _, not starting with a digit) to strings', options);
}
