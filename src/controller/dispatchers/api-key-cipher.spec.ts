import { ApiKeyCipher } from './api-key-cipher';

describe('ApiKeyCipher', () => {
  const cipher = new ApiKeyCipher('a-secret-key-of-this-controller');

  it('gives back the key it stored, every time it is asked', () => {
    const stored = cipher.encrypt('dispatcher-key-1');
    expect(stored).toMatch(/^v1:/);
    expect(stored).not.toContain('dispatcher-key-1');
    expect(cipher.decrypt(stored)).toBe('dispatcher-key-1');
    expect(cipher.decrypt(stored)).toBe('dispatcher-key-1');
  });

  it('reads a rotated key as the new one', () => {
    const before = cipher.encrypt('old-key');
    const after = cipher.encrypt('new-key');
    expect(cipher.decrypt(before)).toBe('old-key');
    expect(cipher.decrypt(after)).toBe('new-key');
  });

  it('refuses an altered value each time it is asked, even after reading the original', () => {
    const stored = cipher.encrypt('dispatcher-key-2');
    expect(cipher.decrypt(stored)).toBe('dispatcher-key-2');
    const bytes = Buffer.from(stored.slice(3), 'base64');
    bytes[bytes.length - 1] ^= 1;
    const altered = `v1:${bytes.toString('base64')}`;
    expect(() => cipher.decrypt(altered)).toThrow();
    expect(() => cipher.decrypt(altered)).toThrow();
  });

  it('refuses a value stored under another SECRET_KEY, and an unknown format', () => {
    const other = new ApiKeyCipher('another-controller-secret-key');
    const stored = other.encrypt('their-key');
    cipher.decrypt(cipher.encrypt('warm-the-memo'));
    expect(() => cipher.decrypt(stored)).toThrow();
    expect(() => cipher.decrypt('v0:abc')).toThrow('Unknown encrypted API key format');
  });

  it('keeps answering right past the number of keys it remembers', () => {
    const stored = Array.from({ length: 300 }, (_, i) => [cipher.encrypt(`key-${i}`), `key-${i}`] as const);
    for (const [value, plain] of stored) expect(cipher.decrypt(value)).toBe(plain);
    for (const [value, plain] of stored) expect(cipher.decrypt(value)).toBe(plain);
  });
});
