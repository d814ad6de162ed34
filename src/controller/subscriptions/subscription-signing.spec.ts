import { Webhook } from 'standardwebhooks';
import { SVIX_RETRY_SCHEDULE } from '../../shared/config/subscription-settings';
import { newSecret, retryDelayMs, signedHeaders } from './subscription-signing';

describe('outbound signatures', () => {
  it('verify with the standardwebhooks package under either secret of a rotation', () => {
    const [current, previous] = [newSecret(), newSecret()];
    const body = JSON.stringify({ type: 'task.created', timestamp: new Date().toISOString(), data: { id: 1 } });
    const headers = signedHeaders('0b7c7d52-4ad7-4f55-9a3c-3a8a1f0b1e21', body, [current, previous]);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    for (const secret of [current, previous]) expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(newSecret()).verify(body, headers)).toThrow();
  });
});

describe('retry schedule', () => {
  it('follows Svix with jitter, and ends after the eighth attempt', () => {
    expect(retryDelayMs(1, SVIX_RETRY_SCHEDULE, () => 0.5)).toBe(5000);
    expect(retryDelayMs(2, SVIX_RETRY_SCHEDULE, () => 0)).toBe(240_000);
    expect(retryDelayMs(2, SVIX_RETRY_SCHEDULE, () => 1)).toBe(360_000);
    expect(retryDelayMs(7, SVIX_RETRY_SCHEDULE, () => 0.5)).toBe(36_000_000);
    expect(retryDelayMs(8, SVIX_RETRY_SCHEDULE)).toBeNull();
  });
});
