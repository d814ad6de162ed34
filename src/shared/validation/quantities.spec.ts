import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { cpuToNanoCpus, IsQuantity, isQuantity, memoryToBytes, parseQuantity } from './quantities';

const NOT_QUANTITIES = ['', 'abc', '-1', '1 Gi', '1gi', '1GB', 'Mi', '1.2.3', '1Gii', ' 2', '1e', 5, null];

describe('Kubernetes quantities', () => {
  it.each(['500m', '2', '0.5', '.5', '1.', '512Mi', '1Gi', '100k', '1e3', '2E-1', '1Ti', '250M', '0'])('accepts %s', (value) => {
    expect(isQuantity(value)).toBe(true);
  });

  it.each(NOT_QUANTITIES)('refuses %p', (value) => {
    expect(isQuantity(value)).toBe(false);
    expect(parseQuantity(value)).toBeNull();
  });

  it.each([
    ['2', 2],
    ['0.5', 0.5],
    ['.5', 0.5],
    ['1.', 1],
    ['500m', 0.5],
    ['100k', 100_000],
    ['250M', 250_000_000],
    ['1e3', 1000],
    ['2E-1', 0.2],
    ['512Mi', 536_870_912],
    ['1Gi', 1_073_741_824],
    ['1Ki', 1024],
    ['0', 0],
    ['1.5Gi', 1_610_612_736],
    ['0.5k', 500],
    ['1.Mi', 1_048_576],
    ['1E', 1e18],
    ['2Ei', 2 * 2 ** 60],
    ['250n', 2.5e-7],
  ])('reads %s as %d', (value, expected) => {
    expect(parseQuantity(value)).toBeCloseTo(expected, 9);
  });

  it('turns cpu into the engine NanoCpus', () => {
    expect(cpuToNanoCpus('500m')).toBe(500_000_000);
    expect(cpuToNanoCpus('2')).toBe(2_000_000_000);
    expect(cpuToNanoCpus('100u')).toBe(100_000);
  });

  it('turns memory into whole bytes, rounding up', () => {
    expect(memoryToBytes('512Mi')).toBe(536_870_912);
    expect(memoryToBytes('1G')).toBe(1_000_000_000);
    expect(memoryToBytes('1500m')).toBe(2);
  });

  it('names the field when a value is not a quantity', () => {
    expect(() => memoryToBytes('lots')).toThrow('memory "lots" is not a Kubernetes quantity');
  });
});

describe('@IsQuantity', () => {
  class Resources {
    @IsQuantity('cpu') cpu: string;
    @IsQuantity('memory') memory: string;
  }

  const problems = (body: object) =>
    Object.fromEntries(validateSync(plainToInstance(Resources, body)).map((error) => [error.property, Object.values(error.constraints ?? {})]));

  it('passes quantities and names each bad field with examples of its kind', () => {
    expect(problems({ cpu: '500m', memory: '1Gi' })).toEqual({});
    expect(problems({ cpu: 'lots', memory: 7 })).toEqual({
      cpu: ['cpu must be a Kubernetes quantity such as 500m or 2'],
      memory: ['memory must be a Kubernetes quantity such as 512Mi or 1Gi'],
    });
  });
});
