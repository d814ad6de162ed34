import type { IncomingMessage, ServerResponse } from 'node:http';
import { PassportStrategy } from '@nestjs/passport';
import passport from 'passport';
import { Strategy as CustomStrategy } from 'passport-custom';
import { runStrategy, strategyRegistry } from './passport-strategy';

/** A header strategy like the app's: the header names the caller; "refuse" is a refusal of its own. */
class HeaderStrategy extends PassportStrategy(CustomStrategy, 'spec-header') {
  constructor(private readonly accepted: string) {
    super();
  }

  protected getPassportInstance() {
    return strategyRegistry;
  }

  async validate(request: IncomingMessage): Promise<{ caller: string } | null> {
    const given = request.headers['x-spec'];
    // As a database lookup would, answers come back out of order.
    await new Promise((resolve) => setTimeout(resolve, given === 'alice' ? 20 : 1));
    if (given === 'refuse') throw new Error('refused by the strategy');
    return given === this.accepted ? { caller: given } : null;
  }
}

const request = (value?: string) => ({ headers: value === undefined ? {} : { 'x-spec': value } }) as unknown as IncomingMessage;
const response = {} as ServerResponse;

describe('runStrategy', () => {
  it('answers the caller a strategy accepts, and false when it fails', async () => {
    const strategy = new HeaderStrategy('alice');
    await expect(runStrategy(strategy, request('alice'), response)).resolves.toEqual({ user: { caller: 'alice' } });
    await expect(runStrategy(strategy, request('mallory'), response)).resolves.toEqual({ user: false });
    await expect(runStrategy(strategy, request(), response)).resolves.toEqual({ user: false });
  });

  it('rejects with the refusal a strategy makes itself', async () => {
    await expect(runStrategy(new HeaderStrategy('alice'), request('refuse'), response)).rejects.toThrow('refused by the strategy');
  });

  it('runs each instance as built, whatever was registered last under the same name', async () => {
    const first = new HeaderStrategy('alice');
    const second = new HeaderStrategy('bob');
    await expect(runStrategy(first, request('alice'), response)).resolves.toEqual({ user: { caller: 'alice' } });
    await expect(runStrategy(first, request('bob'), response)).resolves.toEqual({ user: false });
    await expect(runStrategy(second, request('bob'), response)).resolves.toEqual({ user: { caller: 'bob' } });
    // Nothing lands in Passport's process-wide registry.
    expect((passport as unknown as { _strategy(name: string): unknown })._strategy('spec-header')).toBeUndefined();
  });

  it('keeps concurrent requests apart on one instance', async () => {
    const strategy = new HeaderStrategy('alice');
    const answers = await Promise.all(['alice', 'bob', 'alice', 'carol'].map((value) => runStrategy(strategy, request(value), response)));
    expect(answers.map((answer) => answer.user)).toEqual([{ caller: 'alice' }, false, { caller: 'alice' }, false]);
  });
});
