import { hashClientSecret, verifyClientSecret } from '../oauth/client-secret';
import { parseAuthorization } from './auth.service';
import { isExpired, newToken, safeEqual, tokenHash } from './secret-hash';

describe('token hashing', () => {
  it('stores a SHA-256 hex digest, never the token', () => {
    const token = newToken('atc_op_');
    expect(token).toMatch(/^atc_op_[A-Za-z0-9_-]{43}$/);
    expect(tokenHash(token)).toMatch(/^[0-9a-f]{64}$/);
    expect(tokenHash(token)).not.toContain(token.slice(7));
    expect(tokenHash(token)).toBe(tokenHash(token));
  });

  it('makes a different token every time', () => {
    const tokens = new Set(Array.from({ length: 100 }, () => newToken('x')));
    expect(tokens.size).toBe(100);
  });

  it('compares in constant time, whatever the lengths', () => {
    expect(safeEqual('secret', 'secret')).toBe(true);
    expect(safeEqual('secret', 'secreT')).toBe(false);
    expect(safeEqual('secret', 'secret-longer')).toBe(false);
    expect(safeEqual('', 'secret')).toBe(false);
  });
});

describe('token expiry', () => {
  const now = new Date('2026-01-01T12:00:00Z');

  it('accepts a token before its expiry instant', () => {
    expect(isExpired(new Date('2026-01-01T12:00:01Z'), now)).toBe(false);
  });

  it('refuses a token from its expiry instant on', () => {
    expect(isExpired(new Date('2026-01-01T12:00:00Z'), now)).toBe(true);
    expect(isExpired(new Date('2026-01-01T11:00:00Z'), now)).toBe(true);
  });
});

describe('client secret hashing (scrypt)', () => {
  it('verifies the right secret and refuses a wrong one', async () => {
    const stored = await hashClientSecret('s3cret');
    expect(stored).toMatch(/^scrypt\$16384\$8\$1\$[A-Za-z0-9_-]+\$[A-Za-z0-9_-]+$/);
    expect(stored).not.toContain('s3cret');
    await expect(verifyClientSecret('s3cret', stored)).resolves.toBe(true);
    await expect(verifyClientSecret('s3cret ', stored)).resolves.toBe(false);
  });

  it('salts each hash', async () => {
    expect(await hashClientSecret('same')).not.toBe(await hashClientSecret('same'));
  });

  it('refuses anything against a malformed stored hash', async () => {
    await expect(verifyClientSecret('x', 'sha1$abc')).resolves.toBe(false);
  });
});

describe('Authorization header', () => {
  it('reads Token and Bearer, scheme in any case', () => {
    expect(parseAuthorization('Token abc')).toEqual({ scheme: 'token', value: 'abc' });
    expect(parseAuthorization('bearer  xyz ')).toEqual({ scheme: 'bearer', value: 'xyz' });
    expect(parseAuthorization('Token')).toEqual({ scheme: 'token', value: '' });
  });

  it('treats no header or another scheme as no credentials', () => {
    expect(parseAuthorization(undefined)).toBeNull();
    expect(parseAuthorization('Basic dXNlcjpwYXNz')).toBeNull();
    expect(parseAuthorization('')).toBeNull();
  });
});
