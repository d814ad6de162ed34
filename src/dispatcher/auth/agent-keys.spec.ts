import { createHmac } from 'node:crypto';
import { deriveKey, perTaskAgentKey, seal, secretsEqual, unseal } from './agent-keys';

describe('agent keys and sealed secrets', () => {
  it('makes the per-task key as hex HMAC-SHA256 of the agent key and the task id', () => {
    const expected = createHmac('sha256', 'k').update('0b4c').digest('hex');
    expect(perTaskAgentKey('k', '0b4c')).toBe(expected);
    expect(perTaskAgentKey('k', 'other')).not.toBe(expected);
  });

  it('compares secrets exactly', () => {
    expect(secretsEqual('abc', 'abc')).toBe(true);
    expect(secretsEqual('abc', 'abd')).toBe(false);
    expect(secretsEqual('abc', 'abcd')).toBe(false);
    expect(secretsEqual('', 'abc')).toBe(false);
  });

  it('seals a token so only the same key opens it', () => {
    const key = deriveKey('secret', 'callback-token');
    const sealed = seal(key, 'token-123');
    expect(sealed).not.toContain('token-123');
    expect(unseal(key, sealed)).toBe('token-123');
    expect(() => unseal(deriveKey('other', 'callback-token'), sealed)).toThrow();
  });
});
