import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { ConfigError, loadConfig } from './config';

const secrets = { API_TOKEN: 't', SECRET_KEY: 's', CALLBACK_SIGNING_KEY: 'c', DISPATCHER_API_KEY: 'd', API_KEY: 'k', AGENT_KEY: 'a' };
const echo = { name: 'echo', image: 'agent-examples/echo', backend: 'local', size: 3, resources: { cpu: '1', memory: '512Mi' } };

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig({ ...secrets, ...env });
    return [];
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
}

describe('WARM_POOLS', () => {
  it('defaults to no pool, and reads a JSON array', () => {
    expect(loadConfig(secrets).warmPools).toEqual([]);
    expect(loadConfig({ ...secrets, WARM_POOLS: JSON.stringify([{ ...echo, runtime_class: 'gvisor' }]) }).warmPools).toEqual([
      { name: 'echo', image: 'agent-examples/echo', backend: 'local', namespace: '', size: 3, resources: { cpu: '1', memory: '512Mi' }, runtimeClass: 'gvisor' },
    ]);
  });

  it('reads a YAML or JSON file named by its path', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'pools-'));
    try {
      const yaml = path.join(dir, 'pools.yaml');
      writeFileSync(yaml, '- name: echo\n  image: agent-examples/echo\n  backend: local\n  size: 2\n  resources: {cpu: 500m, memory: 256Mi}\n');
      expect(loadConfig({ ...secrets, WARM_POOLS: yaml }).warmPools.map((pool) => [pool.name, pool.size])).toEqual([['echo', 2]]);
      const json = path.join(dir, 'pools.json');
      writeFileSync(json, JSON.stringify([echo]));
      expect(loadConfig({ ...secrets, WARM_POOLS: json }).warmPools).toHaveLength(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('stops the boot naming each bad entry and its field', () => {
    expect(problemsOf({ WARM_POOLS: JSON.stringify([{ ...echo, size: 1001 }]) })).toEqual([expect.stringMatching(/^WARM_POOLS entry "echo": size /)]);
    expect(problemsOf({ WARM_POOLS: JSON.stringify([echo, { ...echo, name: 'big', resources: { cpu: 'lots', memory: '1Gi' } }]) }))
      .toEqual([expect.stringMatching(/^WARM_POOLS entry "big": resources\.cpu must be a Kubernetes cpu quantity/)]);
    expect(problemsOf({ WARM_POOLS: JSON.stringify([{ image: 'x' }]) })).toEqual(expect.arrayContaining([expect.stringMatching(/^WARM_POOLS entry #1: name /)]));
    expect(problemsOf({ WARM_POOLS: JSON.stringify([{ ...echo, backend: 'kubernetes' }]) })).toEqual([expect.stringMatching(/backend kubernetes is not enabled \(DISPATCHER_BACKENDS\)/)]);
    expect(problemsOf({ WARM_POOLS: JSON.stringify([echo, echo]) })).toEqual([expect.stringMatching(/^WARM_POOLS entry "echo": the name is used twice/)]);
    expect(problemsOf({ WARM_POOLS: '/no/such/pools.yaml' })).toEqual([expect.stringMatching(/^WARM_POOLS is neither a JSON array nor the path of a file/)]);
    expect(problemsOf({ WARM_POOLS: '[{"name": ' })).toEqual([expect.stringMatching(/^WARM_POOLS /)]);
  });
});
