import { RecentKeys } from './recent-keys';

describe('RecentKeys', () => {
  it('remembers what was added', () => {
    const keys = new RecentKeys(3);
    keys.add('a');
    expect(keys.has('a')).toBe(true);
    expect(keys.has('b')).toBe(false);
  });

  it('forgets the oldest key beyond its capacity', () => {
    const keys = new RecentKeys(2);
    keys.add('a');
    keys.add('b');
    keys.add('c');
    expect([keys.has('a'), keys.has('b'), keys.has('c')]).toEqual([false, true, true]);
  });

  it('counts a key added again as new', () => {
    const keys = new RecentKeys(2);
    keys.add('a');
    keys.add('b');
    keys.add('a');
    keys.add('c');
    expect([keys.has('a'), keys.has('b'), keys.has('c')]).toEqual([true, false, true]);
  });
});
