import { TransformationType } from 'class-transformer';
import { getMetadataStorage, ValidationArguments, ValidationTypes } from 'class-validator';
import { keepRuleLookups, ruleGeneration } from './rule-lookup';

// The storage the decorators write to (and plainToInstance reads), which the package exports only by its path.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { defaultMetadataStorage } = require('class-transformer/cjs/storage') as typeof import('class-transformer/types/storage');

type ValidationMetadata = ReturnType<ReturnType<typeof getMetadataStorage>['getTargetValidationMetadatas']>[number];
type ConstraintMetadata = ReturnType<ReturnType<typeof getMetadataStorage>['getTargetValidatorConstraints']>[number];
type Target = new () => object;
type Instance = Record<string, unknown>;

interface Check {
  metadata: ValidationMetadata;
  constraints: ConstraintMetadata[];
}

interface PropertyPlan {
  name: string;
  /** `@IsOptional`, `@ValidateIf`: every one must hold for the checks to run. */
  conditions: ((object: object, value: unknown) => boolean)[];
  checks: Check[];
  /** `@ValidateNested` is among its rules. */
  validatesNested: boolean;
  /** With `@Type(() => Class)` beside it: the class each nested object becomes. */
  nested?: Target;
  /** Transformed by class-transformer in a way this does not follow: present in a body, the pipe decides. */
  unsupported?: boolean;
}

interface ClassPlan {
  target: Target;
  properties: Map<string, PropertyPlan>;
}

/** Classes whose rules or transformations this does not follow: the pipe handles their bodies alone. */
const NO_PLAN = null;
let plans = new WeakMap<Target, ClassPlan | typeof NO_PLAN>();
let planned = -1;

/**
 * A JSON body the global pipe would accept, turned into its DTO the way the pipe turns it, without
 * class-transformer and class-validator's executor: about a tenth of the busiest endpoints' CPU
 * went to building and walking their error trees and copying the body, for bodies that pass.
 *
 * It runs the very rule functions class-validator runs (the same constraint instances, with the
 * same arguments), in the executor's order of conditions, checks and nested objects, on an
 * instance built as class-transformer builds it for a class without transformations. It answers
 * only for a body it can decide alone and that passes every rule: a plain object holding only
 * properties that have rules. Anything else (a failure, an unknown or reserved key, a rule that is
 * asynchronous, a property with `@Transform`, `@Expose`, `@Exclude` or a `@Type` that converts)
 * answers `undefined`, and the pipe then decides and words the error as always.
 * `plain-acceptance.spec.ts` compares both on bodies generated from every DTO's rules.
 */
export function acceptPlain<T extends object>(target: new () => T, body: unknown): T | undefined {
  const plan = planOf(target as Target);
  if (!plan) return undefined;
  const instance = build(plan, body);
  return instance && passes(plan, instance) ? (instance as T) : undefined;
}

function planOf(target: Target): ClassPlan | null {
  // A rule added after the plans were made (`registerDecorator`, a mapped type built late) drops them all.
  keepRuleLookups();
  if (planned !== ruleGeneration()) {
    plans = new WeakMap();
    planned = ruleGeneration();
  }
  const known = plans.get(target);
  if (known !== undefined) return known;
  // Set first: a class nested in itself finds no plan while its own is made, and leaves that property to the pipe.
  plans.set(target, NO_PLAN);
  const plan = compile(target);
  plans.set(target, plan);
  return plan;
}

function compile(target: Target): ClassPlan | null {
  const storage = getMetadataStorage();
  // The executor's own lookup (no groups, `always` and `strictGroups` off, as the pipe validates).
  const rules = storage.getTargetValidationMetadatas(target, undefined as unknown as string, false, false);
  if (rules.length === 0) return NO_PLAN;
  if (defaultMetadataStorage.getExposedMetadatas(target).length > 0 || defaultMetadataStorage.getExcludedMetadatas(target).length > 0) return NO_PLAN;
  const properties = new Map<string, PropertyPlan>();
  for (const rule of rules) {
    let property = properties.get(rule.propertyName);
    if (!property) properties.set(rule.propertyName, (property = { name: rule.propertyName, conditions: [], checks: [], validatesNested: false }));
    switch (rule.type) {
      case ValidationTypes.CUSTOM_VALIDATION:
      case ValidationTypes.IS_DEFINED: {
        const constraints = storage.getTargetValidatorConstraints(rule.constraintCls);
        if (constraints.some((constraint) => constraint.async)) return NO_PLAN;
        property.checks.push({ metadata: rule, constraints });
        break;
      }
      case ValidationTypes.CONDITIONAL_VALIDATION:
        property.conditions.push(rule.constraints[0] as PropertyPlan['conditions'][number]);
        break;
      case ValidationTypes.NESTED_VALIDATION:
        property.validatesNested = true;
        break;
      case ValidationTypes.WHITELIST:
        break;
      default:
        return NO_PLAN;
    }
  }
  for (const property of properties.values()) {
    const type = defaultMetadataStorage.findTypeMetadata(target, property.name);
    const nested = property.validatesNested ? nestedClassOf(type) : null;
    property.nested = nested && planOf(nested) ? nested : undefined;
    // A property transformed on its way (`@Transform`, a conversion such as `@Type(() => Number)`,
    // a nested class this cannot build): a body that holds it is left to the pipe.
    property.unsupported = defaultMetadataStorage.findTransformMetadatas(target, property.name, TransformationType.PLAIN_TO_CLASS).length > 0
      || ((type !== undefined || property.validatesNested) && !property.nested);
  }
  return { target, properties };
}

const NOT_CLASSES = new Set<unknown>([Object, Array, String, Number, Boolean, Date, Map, Set, Buffer, Promise, Symbol, BigInt]);

/** The class of `@Type(() => Class)`, when it is a plain one (no discriminator, no function of the object). */
function nestedClassOf(type: ReturnType<typeof defaultMetadataStorage.findTypeMetadata>): Target | null {
  if (!type || type.options?.discriminator || type.typeFunction.length > 0) return null;
  const nested = type.typeFunction() as unknown;
  return typeof nested === 'function' && !NOT_CLASSES.has(nested) && nested.prototype ? (nested as Target) : null;
}

function isPlainObject(value: unknown): value is Instance {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** The instance class-transformer would make of `plain`, or undefined when that is not sure. */
function build(plan: ClassPlan, plain: unknown): Instance | undefined {
  if (!isPlainObject(plain)) return undefined;
  const instance = new plan.target() as Instance;
  for (const key of Object.keys(plain)) {
    const property = plan.properties.get(key);
    // A key without rules (stripped by the pipe), `__proto__` or `constructor` among them.
    if (!property || property.unsupported) return undefined;
    let value = plain[key];
    if (property.nested && value !== null && value !== undefined) {
      const nested = plans.get(property.nested)!;
      if (Array.isArray(value)) {
        const items: Instance[] = [];
        for (const item of value) {
          const built = build(nested, item);
          if (!built) return undefined;
          items.push(built);
        }
        value = items;
      } else {
        value = build(nested, value);
        if (!value) return undefined;
      }
    }
    instance[key] = value;
  }
  // The pipe's whitelist: a field the class sets itself (a declared field is an own property) without rules goes.
  for (const key of Object.keys(instance)) if (!plan.properties.has(key)) delete instance[key];
  return instance;
}

/** class-validator's executor on `instance` (performValidations), answering only whether all passed. */
function passes(plan: ClassPlan, instance: Instance): boolean {
  for (const property of plan.properties.values()) {
    const value = instance[property.name];
    let applies = true;
    for (const condition of property.conditions) applies = condition(instance, value) && applies;
    if (!applies) continue;
    for (const { metadata, constraints } of property.checks) {
      if (metadata.validateIf && !metadata.validateIf(instance, value)) continue;
      const args: ValidationArguments = { targetName: instance.constructor?.name, property: metadata.propertyName, object: instance, value, constraints: metadata.constraints };
      // `each` checks an array's items one by one (JSON holds no Set or Map), anything else as it is.
      const items = metadata.each && Array.isArray(value) ? value : [value];
      for (const constraint of constraints) {
        for (const item of items) {
          const valid: unknown = constraint.instance.validate(item, args);
          if (!valid || isThenable(valid)) return false;
        }
      }
    }
    if (property.nested && value !== undefined && !nestedPasses(plans.get(property.nested)!, value)) return false;
  }
  return true;
}

/** `nestedValidations`: an array's items each, an object by its own class's rules, anything else an error. */
function nestedPasses(plan: ClassPlan, value: unknown): boolean {
  if (Array.isArray(value)) return value.every((item) => item === undefined || nestedPasses(plan, item));
  return value instanceof plan.target && passes(plan, value as Instance);
}

function isThenable(value: unknown): boolean {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}
