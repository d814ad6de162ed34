import { CallDeadlines, describeRequest, KubeApiTimeoutError } from './kubernetes-call-deadline';
import { describeApiError, isTransient } from './kubernetes-client';

describe('API call deadlines (KUBE_API_TIMEOUT_SECONDS)', () => {
  it('names each request by verb and resource, as the API server does', () => {
    const server = 'https://10.0.0.1:6443';
    expect(describeRequest('POST', `${server}/apis/batch/v1/namespaces/agents/jobs`)).toEqual({ verb: 'create', resource: 'jobs' });
    expect(describeRequest('GET', `${server}/apis/batch/v1/namespaces/agents/jobs/task-1?pretty=false`)).toEqual({ verb: 'get', resource: 'jobs' });
    expect(describeRequest('GET', `${server}/api/v1/namespaces/agents/pods?labelSelector=a%3Db`)).toEqual({ verb: 'list', resource: 'pods' });
    expect(describeRequest('GET', `${server}/api/v1/namespaces/agents/pods/p-1/log?tailLines=10`)).toEqual({ verb: 'get', resource: 'pods/log' });
    expect(describeRequest('PATCH', `${server}/apis/networking.k8s.io/v1/namespaces/agents/networkpolicies/np`)).toEqual({ verb: 'patch', resource: 'networkpolicies' });
    expect(describeRequest('DELETE', `${server}/api/v1/namespaces/agents/secrets/s`)).toEqual({ verb: 'delete', resource: 'secrets' });
    expect(describeRequest('GET', `${server}/api/v1/namespaces`)).toEqual({ verb: 'list', resource: 'namespaces' });
  });

  it('rejects a call with no answer by its deadline, as a transient network failure, and aborts its signal', async () => {
    const deadlines = new CallDeadlines(50);
    let signal: AbortSignal | undefined;
    const hung = deadlines.run(async () => {
      await deadlines.middleware().pre({ getHttpMethod: () => 'POST', getUrl: () => 'http://k/apis/batch/v1/namespaces/a/jobs', setSignal: (s: AbortSignal) => (signal = s) } as never);
      return new Promise<never>(() => undefined);
    });
    await expect(hung).rejects.toBeInstanceOf(KubeApiTimeoutError);
    const error = await hung.catch((e: unknown) => e);
    expect(signal?.aborted).toBe(true);
    expect(signal?.reason).toBe(error);
    expect(isTransient(error)).toBe(true);
    expect(describeApiError(error)).toBe('no answer from the Kubernetes API server to create jobs within 0.05 s (KUBE_API_TIMEOUT_SECONDS); the request was aborted (ETIMEDOUT)');
  });

  it('passes an answer or another error through unchanged', async () => {
    const deadlines = new CallDeadlines(60_000);
    await expect(deadlines.run(async () => 'answered')).resolves.toBe('answered');
    await expect(deadlines.run(async () => { throw new Error('403'); })).rejects.toThrow('403');
  });
});
