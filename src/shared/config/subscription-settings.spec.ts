import { ConfigError, loadConfig } from './config';
import { SVIX_RETRY_SCHEDULE } from './subscription-settings';

const secrets = { API_TOKEN: 't', SECRET_KEY: 's', CALLBACK_SIGNING_KEY: 'c', DISPATCHER_API_KEY: 'd', API_KEY: 'k', AGENT_KEY: 'a' };

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig({ ...secrets, ...env });
    return [];
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
}

describe('subscription settings', () => {
  it("default to no allowed private block, Svix's schedule and 4 attempts per endpoint", () => {
    expect(loadConfig(secrets).subscriptions).toEqual({ allowedCidrs: [], retrySchedule: SVIX_RETRY_SCHEDULE, concurrencyPerEndpoint: 4 });
  });

  it('read CIDR blocks and a schedule, and name the variable of a wrong value', () => {
    const config = loadConfig({ ...secrets, SUBSCRIPTION_ALLOWED_CIDRS: '10.0.0.0/8, fd00::/8', SUBSCRIPTION_RETRY_SCHEDULE: '1,2,3' });
    expect(config.subscriptions.allowedCidrs.map(([block, bits]) => `${block.toString()}/${bits}`)).toEqual(['10.0.0.0/8', 'fd00::/8']);
    expect(config.subscriptions.retrySchedule).toEqual([1, 2, 3]);
    expect(problemsOf({ SUBSCRIPTION_ALLOWED_CIDRS: '10.0.0.0/8,localhost' })).toEqual([expect.stringMatching(/^SUBSCRIPTION_ALLOWED_CIDRS must be a comma-separated list of CIDR blocks/)]);
    expect(problemsOf({ SUBSCRIPTION_RETRY_SCHEDULE: '5,soon' })).toEqual([expect.stringMatching(/^SUBSCRIPTION_RETRY_SCHEDULE must be/)]);
    expect(problemsOf({ SUBSCRIPTION_CONCURRENCY_PER_ENDPOINT: '0' })).toEqual([expect.stringMatching(/^SUBSCRIPTION_CONCURRENCY_PER_ENDPOINT must be a whole number from 1 to 64/)]);
  });
});
