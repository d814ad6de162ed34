import { Transform } from 'class-transformer';
import { getMetadataStorage, IsIn, IsOptional, IsString, MaxLength } from 'class-validator';
import { randomUUID } from 'node:crypto';
import { ControllerModule } from '../../controller/controller.module';
import { TaskCallbackDto, TaskProgressDto, TaskTemplateDto } from '../../controller/tasks/tasks.dto';
import { CheckbackDto, CheckinDto, ProgressDto } from '../../dispatcher/agent/agent.dto';
import { DispatcherModule } from '../../dispatcher/dispatcher.module';
import { CreateTaskDto } from '../../dispatcher/tasks/tasks.dto';
import { DomainError } from '../errors/domain-error';
import { createValidationPipe } from '../errors/validation';
import { acceptPlain } from './plain-acceptance';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { defaultMetadataStorage } = require('class-transformer/cjs/storage') as typeof import('class-transformer/types/storage');

type Target = new () => object;
type Rule = ReturnType<ReturnType<typeof getMetadataStorage>['getTargetValidationMetadatas']>[number];

// Every DTO the roles declare is registered by loading their modules.
void ControllerModule;
void DispatcherModule;

/**
 * A transformation whose result passes the rules either way (only declining it keeps the two
 * equal), and a declared field without rules, which the pipe's whitelist removes.
 */
class TrimmedNameDto {
  @IsOptional() @Transform(({ value }) => (typeof value === 'string' ? value.trim() : value)) @IsString() @MaxLength(16) name?: string;
  @IsOptional() @IsIn(['a', 'b']) kind?: string;
  note?: string;
}
void TrimmedNameDto;

const reference = createValidationPipe({ plainAcceptance: false });
const BODIES_PER_CLASS = Number(process.env.PLAIN_ACCEPTANCE_BODIES ?? 400);
const SEED = Number(process.env.PLAIN_ACCEPTANCE_SEED ?? 20261128);

/** mulberry32: the same bodies on every run of one seed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** What the reference pipe answers: the DTO, or the 400's field errors. */
async function referenceAnswer(target: Target, body: unknown): Promise<{ value?: unknown; errors?: unknown }> {
  try {
    return { value: await reference.transform(body, { type: 'body', metatype: target }) };
  } catch (error) {
    if (error instanceof DomainError) return { errors: error.options.fields ?? error.message };
    throw error;
  }
}

const rulesOf = (target: Target): Rule[] => getMetadataStorage().getTargetValidationMetadatas(target, undefined as unknown as string, false, false);

/**
 * Bodies around each class's rules: each property left out, null, a value meant to pass (at the
 * edges of its lengths and ranges), or one of any type; now and then a key without rules,
 * `__proto__` or `constructor`, at the top or inside free-form objects. Written as JSON and parsed,
 * as bodies arrive.
 */
function bodies(target: Target, next: () => number, count: number): string[] {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)];
  const ANY = [0, -1, 1.5, 2 ** 31, 65536, '', 'x', 'tcp', true, false, [], {}, [1], ['a'], { a: 1 }, null, '500m', '1Gi', '10.0.0.0/8', 'UTC', '*/5 * * * *', 'https://example.com/a'];
  const freeForm = (depth: number): unknown => {
    const object: Record<string, unknown> = {};
    for (let i = Math.floor(next() * 4); i > 0; i--) object[pick(['a', 'b', 'key', 'constructor', '__proto__', 'prototype', 'x-y'])] = depth > 2 ? pick(ANY) : pick([pick(ANY), freeForm(depth + 1), [freeForm(depth + 1), 1]]);
    return object;
  };
  const text = (min: number, max: number): string => {
    const length = pick([0, 1, min, Math.max(0, min - 1), max, max + 1, Math.min(max, 12)].filter((n) => Number.isFinite(n) && n >= 0 && n <= 70_000));
    const alphabet = pick(['abcdefghij', 'a-z_0123', '😀é\u0000 ', 'ABC/.:']);
    return Array.from({ length }, () => pick([...alphabet])).join('').slice(0, length + 1);
  };
  const meant = (rules: Rule[], depth: number): unknown => {
    const names = new Set(rules.map((rule) => rule.name));
    const constraint = (name: string) => rules.find((rule) => rule.name === name)?.constraints?.[0] as number | undefined;
    const nested = rules.find((rule) => rule.type === 'nestedValidation');
    if (nested) {
      const type = defaultMetadataStorage.findTypeMetadata(nested.target as Target, nested.propertyName)?.typeFunction() as Target | undefined;
      const one = () => (type && depth < 4 ? generate(type, depth + 1) : {});
      return names.has('isArray') || nested.each ? Array.from({ length: Math.floor(next() * 3) }, one) : one();
    }
    const isIn = rules.find((rule) => rule.name === 'isIn');
    // Now and then in a form a @Transform or a @Type conversion would change.
    const altered = (value: unknown) => (typeof value === 'string' && next() < 0.2 ? pick([value.toUpperCase(), ` ${value} `]) : typeof value === 'number' && next() < 0.2 ? String(value) : value);
    if (isIn) return altered(pick(isIn.constraints[0] as unknown[]));
    if (names.has('isUUID')) return pick([randomUUID(), randomUUID().toUpperCase(), 'not-a-uuid']);
    if (names.has('isBoolean')) return next() < 0.5;
    if (names.has('isInt') || names.has('min') || names.has('max')) {
      const min = constraint('min') ?? -5;
      const max = constraint('max') ?? 100;
      return altered(pick([min, max, min - 1, max + 1, Math.floor((min + max) / 2), (min + max) / 2 + 0.5]));
    }
    if (names.has('isArray')) return Array.from({ length: pick([0, 1, 2, constraint('arrayMaxSize') ?? 3]) }, () => pick(['a', 'b', 1, {}]));
    if (names.has('isObject')) return freeForm(0);
    if (names.has('isDateString')) return pick([new Date(1_700_000_000_000).toISOString(), '2026-13-40']);
    if (names.has('isString') || names.has('maxLength') || names.has('minLength') || names.has('matches')) return altered(text(constraint('minLength') ?? 1, constraint('maxLength') ?? 16));
    return pick(ANY);
  };
  function generate(of: Target, depth: number): Record<string, unknown> {
    const byProperty = new Map<string, Rule[]>();
    for (const rule of rulesOf(of)) byProperty.set(rule.propertyName, [...(byProperty.get(rule.propertyName) ?? []), rule]);
    const body: Record<string, unknown> = {};
    for (const [property, rules] of byProperty) {
      const roll = next();
      if (roll < 0.15) continue;
      body[property] = roll < 0.2 ? null : roll < 0.9 ? meant(rules, depth) : pick(ANY);
    }
    if (next() < 0.08) body[pick(['unknown_field', 'constructor', '__proto__', 'toString'])] = pick(ANY);
    return body;
  }
  return Array.from({ length: count }, () => JSON.stringify(generate(target, 0)));
}

describe('acceptPlain, beside the global pipe on bodies generated from every DTO', () => {
  const targets = [...(getMetadataStorage() as unknown as { validationMetadatas: Map<unknown, unknown> }).validationMetadatas.keys()]
    .filter((target): target is Target => typeof target === 'function');

  it('finds the DTOs of both roles', () => {
    const names = targets.map((target) => target.name);
    expect(names).toEqual(expect.arrayContaining(['TrimmedNameDto', 'TaskCallbackDto', 'TaskTemplateDto', 'CreateTaskDto', 'CheckinDto', 'CheckbackDto']));
    expect(targets.length).toBeGreaterThan(40);
  });

  it('accepts only what the pipe accepts, as the same DTO, and accepts most of it', async () => {
    const next = random(SEED);
    let accepted = 0;
    let acceptedByPipe = 0;
    const mismatches: string[] = [];
    for (const target of targets) {
      for (const json of bodies(target, next, BODIES_PER_CLASS)) {
        const fast = acceptPlain(target, JSON.parse(json));
        const answer = await referenceAnswer(target, JSON.parse(json));
        if (answer.value !== undefined) acceptedByPipe++;
        if (fast === undefined) continue;
        accepted++;
        if (answer.errors !== undefined) mismatches.push(`${target.name} ${json}: accepted here, the pipe answers ${JSON.stringify(answer.errors)}`);
        else if (!equalDeep(fast, answer.value)) mismatches.push(`${target.name} ${json}: ${shown(fast)} here, ${shown(answer.value)} from the pipe`);
      }
    }
    expect(mismatches.slice(0, 5)).toEqual([]);
    // The generator reaches valid bodies, and the fast path takes most of them.
    expect(acceptedByPipe).toBeGreaterThan(targets.length * 10);
    expect(accepted / acceptedByPipe).toBeGreaterThan(0.5);
  });

  it.each([
    ['TaskCallbackDto', TaskCallbackDto, { status: 'completed', exit_code: 0, result_key: 'results/x/result.json', result_metadata: { constructor: 1, list: [{ a: null }] } }],
    ['TaskProgressDto', TaskProgressDto, { percentage: 50, message: 'brief read', data: { step: 2 } }],
    ['CheckinDto', CheckinDto, { task_id: randomUUID() }],
    ['ProgressDto', ProgressDto, { task_id: randomUUID(), percentage: 100, message: 'done' }],
    ['CheckbackDto', CheckbackDto, { task_id: randomUUID(), status: 'failed', error: 'exit 1' }],
    ['CreateTaskDto', CreateTaskDto, {
      task_id: randomUUID(), agent_image: 'bench/checkin', runtime_target: { type: 'local', namespace: '' }, resources: { cpu: '500m', memory: '512Mi' }, timeout_seconds: 600,
      env: { GREETING: 'hello' }, brief_key: 'briefs/x.json', callback_url: 'http://127.0.0.1:8000/api/v1/tasks/x/callback/', callback_token: 'token',
    }],
    ['TaskTemplateDto', TaskTemplateDto, { agent_image: 'bench/checkin', runtime_target: { type: 'local', namespace: '' }, timeout_seconds: 600, brief: { prompt: 'p' } }],
  ])('takes the busy endpoints\' usual %s body itself', async (_name, target, body) => {
    const json = JSON.stringify(body).replace('"constructor"', '"__proto__":{"b":2},"constructor"');
    const fast = acceptPlain(target as Target, JSON.parse(json));
    expect(fast).toBeInstanceOf(target);
    expect(equalDeep(fast, (await referenceAnswer(target as Target, JSON.parse(json))).value)).toBe(true);
  });

  it('leaves a failing body, an unknown key and a transformed property to the pipe', () => {
    expect(acceptPlain(TaskCallbackDto, { status: 'done' })).toBeUndefined();
    expect(acceptPlain(TaskCallbackDto, { status: 'completed', extra: 1 })).toBeUndefined();
    expect(acceptPlain(TaskCallbackDto, JSON.parse('{"status":"completed","__proto__":{}}'))).toBeUndefined();
    expect(acceptPlain(TaskCallbackDto, [{ status: 'completed' }])).toBeUndefined();
    expect(acceptPlain(TaskCallbackDto, null)).toBeUndefined();
    // `protocol` is lower-cased by @Transform on its way into PortDto.
    const task = { task_id: randomUUID(), agent_image: 'a', runtime_target: { type: 'local', namespace: '' }, callback_url: 'http://127.0.0.1:8000/cb/', callback_token: 't' };
    expect(acceptPlain(CreateTaskDto, task)).toBeInstanceOf(CreateTaskDto);
    const withPorts = { ...task, ports: [{ container_port: 80, protocol: 'TCP' }] };
    expect(acceptPlain(CreateTaskDto, withPorts)).toBeUndefined();
  });
});

/** Equal values, with the same class at every level and own `__proto__` keys compared as data. */
function equalDeep(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return Number.isNaN(a) && Number.isNaN(b);
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b) || Array.isArray(a) !== Array.isArray(b)) return false;
  const keysA = Object.keys(a);
  const keysB = Object.keys(b);
  if (keysA.length !== keysB.length) return false;
  return keysA.every((key) => Object.prototype.hasOwnProperty.call(b, key) && equalDeep(Object.getOwnPropertyDescriptor(a, key)!.value, Object.getOwnPropertyDescriptor(b, key)!.value));
}

function shown(value: unknown): string {
  return `${(value as object)?.constructor?.name ?? typeof value} ${JSON.stringify(value)}`;
}
