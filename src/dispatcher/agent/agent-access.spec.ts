import { createHmac, randomBytes } from 'node:crypto';
import { AppConfig } from '../../shared/config/config';
import { DomainError } from '../../shared/errors/domain-error';
import { derivedKeyMatches, perTaskAgentKey, secretsEqual } from '../auth/agent-keys';
import { AgentAccess } from './agent-access';

/** The definition before the per-task key was compared first and without hashing: both keys hashed, the global key first. */
function opensAsDefined(config: { agentKey: string; agentKeyPerTaskOnly: boolean }, key: string, taskId: string): boolean {
  if (!config.agentKeyPerTaskOnly && secretsEqual(key, config.agentKey)) return true;
  return secretsEqual(key, perTaskAgentKey(config.agentKey, taskId));
}

/** What an agent may present: its own key, another task's, the global key, and near misses of each. */
function presentedKeys(agentKey: string, taskId: string): string[] {
  const own = perTaskAgentKey(agentKey, taskId);
  const other = perTaskAgentKey(agentKey, 'another-task');
  const flipped = (key: string, at: number) => `${key.slice(0, at)}${key[at] === '0' ? '1' : '0'}${key.slice(at + 1)}`;
  return [
    own, other, agentKey, '', ' ', own.toUpperCase(), `${own}0`, own.slice(0, 63), ` ${own}`, flipped(own, 0), flipped(own, 63),
    `${agentKey}x`, agentKey.slice(1), randomBytes(32).toString('hex'), randomBytes(16).toString('base64'), 'é'.repeat(32), 'ÿ'.repeat(64),
    createHmac('sha256', 'other-agent-key').update(taskId).digest('hex'),
  ];
}

describe('which tasks an agent key opens', () => {
  const agentKeys = ['agent-key-of-this-dispatcher', randomBytes(32).toString('hex'), 'k'];
  const taskIds = ['3f1c2b9e-0d4a-4c1e-9a57-1b2c3d4e5f60', 'task-1'];

  it.each(agentKeys.flatMap((agentKey) => [false, true].map((agentKeyPerTaskOnly) => ({ agentKey, agentKeyPerTaskOnly }))))(
    'answers as both keys hashed did, for AGENT_KEY %o',
    (config) => {
      const access = new AgentAccess(config as AppConfig);
      for (const taskId of taskIds) {
        for (const key of presentedKeys(config.agentKey, taskId)) expect([key, access.opens(key, taskId)]).toEqual([key, opensAsDefined(config, key, taskId)]);
      }
    },
  );

  it('names why a key is refused: another task\'s, the global one where refused, none at all', () => {
    const access = new AgentAccess({ agentKey: 'agent-key', agentKeyPerTaskOnly: true } as AppConfig);
    const refusal = (key: string) => {
      try {
        access.assert(key, 'task-1');
        return null;
      } catch (error) {
        return (error as DomainError).code;
      }
    };
    expect(refusal(perTaskAgentKey('agent-key', 'task-1'))).toBeNull();
    expect(refusal(perTaskAgentKey('agent-key', 'task-2'))).toBe('permission_denied');
    expect(refusal('agent-key')).toBe('permission_denied');
    expect(refusal('not-a-key')).toBe('authentication_failed');
  });

  it('compares a derived key only with one of its own format, and only exactly', () => {
    const key = perTaskAgentKey('k', 't');
    expect(derivedKeyMatches(key, key)).toBe(true);
    expect(derivedKeyMatches(key.toUpperCase(), key)).toBe(false);
    expect(derivedKeyMatches(`${key.slice(0, 63)}${key[63] === 'a' ? 'b' : 'a'}`, key)).toBe(false);
    expect(derivedKeyMatches('ÿ'.repeat(64), key)).toBe(false);
    expect(derivedKeyMatches('', key)).toBe(false);
  });
});
