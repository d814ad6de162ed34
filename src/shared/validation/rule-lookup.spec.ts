import { plainToInstance } from 'class-transformer';
import { getMetadataStorage, IsInt, IsString, Min, registerDecorator, validateSync, ValidationArguments } from 'class-validator';
import { keepRuleLookups } from './rule-lookup';

class Base {
  @IsString()
  name!: string;
}

class Derived extends Base {
  @IsInt()
  @Min(1, { groups: ['strict'] })
  count!: number;
}

class Later {
  @IsString()
  label!: string;
}

const messages = (target: new () => object, plain: object, groups?: string[]) =>
  validateSync(plainToInstance(target, plain), groups ? { groups } : {}).flatMap((error) => Object.values(error.constraints ?? {}));

describe('keepRuleLookups', () => {
  const storage = getMetadataStorage();
  // The answers before the lookups are kept, from class-validator's own code.
  const before = {
    derived: messages(Derived, { name: 5, count: 0 }),
    strict: messages(Derived, { name: 'x', count: 0 }, ['strict']),
    base: messages(Base, { name: 5, count: 'not a rule of Base' }),
  };
  const rulesBefore = storage.getTargetValidationMetadatas(Derived, '', false, false).map((rule) => `${rule.propertyName}:${rule.name ?? rule.type}`);

  beforeAll(() => keepRuleLookups());

  it('finds the same rules, own and inherited, for each set of groups', () => {
    for (let round = 0; round < 2; round++) {
      expect(messages(Derived, { name: 5, count: 0 })).toEqual(before.derived);
      expect(messages(Derived, { name: 'x', count: 0 }, ['strict'])).toEqual(before.strict);
      expect(messages(Base, { name: 5, count: 'not a rule of Base' })).toEqual(before.base);
    }
    expect(before.derived).toContain('name must be a string');
    expect(before.strict).toEqual(['count must not be less than 1']);
    expect(before.base).toEqual(['name must be a string']);
    expect(storage.getTargetValidationMetadatas(Derived, '', false, false).map((rule) => `${rule.propertyName}:${rule.name ?? rule.type}`)).toEqual(rulesBefore);
  });

  it('answers the same kept list to every caller, and no caller can change it', () => {
    const first = storage.getTargetValidationMetadatas(Derived, '', false, false);
    expect(storage.getTargetValidationMetadatas(Derived, '', false, false)).toBe(first);
    expect(() => first.push(first[0])).toThrow(TypeError);
    expect(storage.getTargetValidationMetadatas(Derived, '', false, false, ['strict'])).not.toBe(first);
  });

  it('sees a rule added after a lookup was kept', () => {
    expect(messages(Later, { label: 'ab' })).toEqual([]);
    registerDecorator({
      name: 'isLong',
      target: Later,
      propertyName: 'label',
      validator: { validate: (value: unknown) => typeof value === 'string' && value.length > 3, defaultMessage: (args?: ValidationArguments) => `${args?.property} is too short` },
    });
    expect(messages(Later, { label: 'ab' })).toEqual(['label is too short']);
    expect(messages(Later, { label: 'abcd' })).toEqual([]);
  });
});
