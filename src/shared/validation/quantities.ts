import { quantityToScalar } from '@kubernetes/client-node/dist/util.js';
import { ValidateBy, ValidationOptions } from 'class-validator';

/**
 * Kubernetes resource quantities (`500m`, `2`, `0.5`, `512Mi`, `1Gi`, `1e3`), in the API
 * server's grammar: a non-negative decimal, then a binary or decimal suffix or an exponent.
 * client-node converts them but does not check the grammar (it reads `1 Gi` or `-1`), so
 * the grammar stays here and only well-formed quantities reach the conversion.
 * The controller checks a task's resources with it before the dispatcher sees them, and the
 * dispatcher both checks them and turns them into the container engine's plain limits.
 */
const QUANTITY = /^(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?\d+)?$/;

/** The quantity in base units (cores, bytes), or null when it is not a quantity. */
export function parseQuantity(value: unknown): number | null {
  if (typeof value !== 'string' || value.length > 64) return null;
  const match = QUANTITY.exec(value);
  if (!match) return null;
  const parsed = scalarOf(value, match[1], match[2] ?? '');
  return Number.isFinite(parsed) ? parsed : null;
}

/**
 * client-node reads the `k` to `Ei` suffixes through BigInt, which refuses a fractional
 * number (`1.5Gi`); such a quantity is its number times the suffix's factor.
 */
function scalarOf(value: string, number: string, suffix: string): number {
  if (number.includes('.') && /^[kMGTPE]/.test(suffix)) return Number(number) * Number(quantityToScalar(`1${suffix}`));
  return Number(quantityToScalar(value));
}

/** Whether the value is written as a quantity (its size is the runtime's business). */
export function isQuantity(value: unknown): boolean {
  return typeof value === 'string' && value.length <= 64 && QUANTITY.test(value);
}

/** A CPU quantity as the container engine's NanoCpus (`500m` -> 500000000). */
export function cpuToNanoCpus(cpu: string): number {
  return Math.round(required(cpu, 'cpu') * 1e9);
}

/** A memory quantity in whole bytes, rounded up as Kubernetes does (`512Mi` -> 536870912). */
export function memoryToBytes(memory: string): number {
  return Math.ceil(required(memory, 'memory'));
}

function required(value: string, what: string): number {
  const parsed = parseQuantity(value);
  if (parsed === null) throw new RangeError(`${what} "${value}" is not a Kubernetes quantity`);
  return parsed;
}

const EXAMPLES = { cpu: '500m or 2', memory: '512Mi or 1Gi' } as const;

/** A `resources.cpu` or `resources.memory` field: a Kubernetes quantity, the message giving examples of that kind. */
export function IsQuantity(kind: keyof typeof EXAMPLES, options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isQuantity',
      validator: {
        validate: (value: unknown) => isQuantity(value),
        defaultMessage: (args) => `${args?.property ?? kind} must be a Kubernetes quantity such as ${EXAMPLES[kind]}`,
      },
    },
    options,
  );
}
