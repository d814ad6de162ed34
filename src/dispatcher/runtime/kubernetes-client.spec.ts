import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ApiException } from '@kubernetes/client-node';
import { describeApiError, isTransient, loadKubeConfig } from './kubernetes-client';

describe('loadKubeConfig', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-'));
  const file = path.join(dir, 'config');
  fs.writeFileSync(file, JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'c', cluster: { server: 'https://kube.example:6443' } }],
    users: [{ name: 'u', user: { token: 't' } }],
    contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
    'current-context': 'x',
  }));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('uses KUBECONFIG outside a pod', () => {
    expect(loadKubeConfig(file, { HOME: dir }).getCurrentCluster()?.server).toBe('https://kube.example:6443');
  });

  it('does not take KUBERNETES_SERVICE_HOST alone for a pod (no service account token)', () => {
    const env = { HOME: dir, KUBERNETES_SERVICE_HOST: '10.0.0.1' };
    expect(loadKubeConfig(file, env, path.join(dir, 'no-token')).getCurrentCluster()?.server).toBe('https://kube.example:6443');
  });

  it('falls back to ~/.kube/config, and refuses to guess when there is none', () => {
    fs.mkdirSync(path.join(dir, '.kube'), { recursive: true });
    fs.copyFileSync(file, path.join(dir, '.kube', 'config'));
    expect(loadKubeConfig(null, { HOME: dir }).getCurrentCluster()?.server).toBe('https://kube.example:6443');
    expect(() => loadKubeConfig(null, { HOME: path.join(dir, 'nowhere') })).toThrow(/run the dispatcher in a pod.*KUBECONFIG/);
    expect(() => loadKubeConfig(path.join(dir, 'missing'), { HOME: dir })).toThrow(/does not exist/);
  });
});

describe('API errors', () => {
  const status = (code: number, reason: string, message: string) =>
    new ApiException(code, 'x', JSON.stringify({ kind: 'Status', code, reason, message }), {});

  it('retries throttling, server errors and dropped connections, not refusals', () => {
    expect(isTransient(status(429, 'TooManyRequests', 'slow down'))).toBe(true);
    expect(isTransient(status(503, 'ServiceUnavailable', 'x'))).toBe(true);
    expect(isTransient(Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNRESET' } }))).toBe(true);
    expect(isTransient(status(422, 'Invalid', 'x'))).toBe(false);
    expect(isTransient(status(403, 'Forbidden', 'x'))).toBe(false);
    expect(isTransient(new Error('bug'))).toBe(false);
  });

  it('describes an error by the API server Status message', () => {
    expect(describeApiError(status(403, 'Forbidden', 'jobs.batch is forbidden: User "x" cannot create'))).toBe(
      '403 Forbidden: jobs.batch is forbidden: User "x" cannot create',
    );
  });
});
