import { createHmac } from 'node:crypto';
import { signCallbackBody, verifyCallbackSignature } from '../../shared/task-protocol/callback-signature';
import { callbackTokenMatches, deriveCallbackToken, hashCallbackToken } from './callback-token';

describe('verifyCallbackSignature', () => {
  const key = 'callback-signing-key';
  const body = Buffer.from('{"status":"completed","exit_code":0}');
  const hex = createHmac('sha256', key).update(body).digest('hex');

  it('accepts sha256= and the lower-case hex HMAC of the raw bytes', () => {
    expect(verifyCallbackSignature(key, body, `sha256=${hex}`)).toBe(true);
    expect(signCallbackBody(key, body)).toBe(`sha256=${hex}`);
  });

  it('refuses a signature made with another key', () => {
    expect(verifyCallbackSignature(key, body, signCallbackBody('another-key', body))).toBe(false);
  });

  it('refuses when one byte of the body differs', () => {
    const altered = Buffer.from(body);
    altered[altered.length - 2] = '1'.charCodeAt(0);
    expect(verifyCallbackSignature(key, altered, `sha256=${hex}`)).toBe(false);
  });

  it('refuses the hex without the sha256= prefix, or with another prefix', () => {
    expect(verifyCallbackSignature(key, body, hex)).toBe(false);
    expect(verifyCallbackSignature(key, body, `sha1=${hex}`)).toBe(false);
  });

  it('refuses upper-case hex (the contract says lower-case)', () => {
    expect(verifyCallbackSignature(key, body, `sha256=${hex.toUpperCase()}`)).toBe(false);
  });

  it('refuses a missing, empty or truncated header', () => {
    expect(verifyCallbackSignature(key, body, undefined)).toBe(false);
    expect(verifyCallbackSignature(key, body, '')).toBe(false);
    expect(verifyCallbackSignature(key, body, `sha256=${hex.slice(0, 62)}`)).toBe(false);
  });
});

describe('callbackTokenMatches', () => {
  it('matches the token whose hash is stored, and nothing else', () => {
    const stored = hashCallbackToken('token-a');
    expect(callbackTokenMatches('token-a', stored)).toBe(true);
    expect(callbackTokenMatches('token-b', stored)).toBe(false);
    expect(callbackTokenMatches('token-a', null)).toBe(false);
  });
});

describe('deriveCallbackToken', () => {
  const task = '3f1c1f5e-8a59-4a57-9b7e-1c1f5e8a594a';
  it('is the same for one task on one dispatcher, and differs by dispatcher, task and key', () => {
    const token = deriveCallbackToken('key', task, 'dispatcher-a');
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(deriveCallbackToken('key', task, 'dispatcher-a')).toBe(token);
    expect(deriveCallbackToken('key', task, 'dispatcher-b')).not.toBe(token);
    expect(deriveCallbackToken('key', '00000000-0000-0000-0000-000000000000', 'dispatcher-a')).not.toBe(token);
    expect(deriveCallbackToken('other-key', task, 'dispatcher-a')).not.toBe(token);
  });
});
