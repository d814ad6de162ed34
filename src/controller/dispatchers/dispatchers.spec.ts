import { ApiKeyCipher } from './api-key-cipher';
import { dispatcherState, slugify } from './dispatcher-state';

describe('dispatcherState', () => {
  const now = new Date('2026-01-01T12:00:00Z');
  const ago = (seconds: number) => new Date(now.getTime() - seconds * 1000);

  it.each([
    [0, 'online'],
    [60, 'online'],
    [61, 'stale'],
    [150, 'stale'],
    [151, 'offline'],
    [86400, 'offline'],
  ])('with a 30 s interval, silent for %i s is %s', (seconds, state) => {
    expect(dispatcherState(ago(seconds), 30, now)).toBe(state);
  });

  it('uses each dispatcher\'s own interval', () => {
    expect(dispatcherState(ago(100), 60, now)).toBe('online');
    expect(dispatcherState(ago(100), 10, now)).toBe('offline');
  });

  it('is offline when never heard from', () => {
    expect(dispatcherState(null, 30, now)).toBe('offline');
  });
});

describe('slugify', () => {
  it.each([
    ['local', 'local'],
    ['GPU Pool #2', 'gpu-pool-2'],
    ['  --Édge  Node--  ', 'edge-node'],
    ['***', ''],
  ])('%j becomes %j', (name, slug) => {
    expect(slugify(name)).toBe(slug);
  });
});

describe('ApiKeyCipher', () => {
  it('decrypts what it encrypted, with a fresh IV each time', () => {
    const cipher = new ApiKeyCipher('secret-one');
    const first = cipher.encrypt('dispatcher-key');
    const second = cipher.encrypt('dispatcher-key');
    expect(first).not.toEqual(second);
    expect(first).not.toContain('dispatcher-key');
    expect(cipher.decrypt(first)).toBe('dispatcher-key');
  });

  it('refuses a value made with another SECRET_KEY', () => {
    const stored = new ApiKeyCipher('secret-one').encrypt('dispatcher-key');
    expect(() => new ApiKeyCipher('secret-two').decrypt(stored)).toThrow();
  });

  it('refuses an altered value', () => {
    const cipher = new ApiKeyCipher('secret-one');
    const stored = cipher.encrypt('dispatcher-key');
    const bytes = Buffer.from(stored.slice(3), 'base64');
    bytes[bytes.length - 1] ^= 1;
    expect(() => cipher.decrypt(`v1:${bytes.toString('base64')}`)).toThrow();
  });
});
