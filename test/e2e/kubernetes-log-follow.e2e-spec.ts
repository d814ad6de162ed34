import { jobName, secretName } from '../../src/dispatcher/runtime/kubernetes-manifests';
import { agentApi, makeTaskRequest, taskApi, waitFor, waitForStatus } from '../harness/dispatcher';
import { startKubeDispatcher, KubeDispatcher } from '../harness/kube-dispatcher';
import { KubeApiServer } from '../k8s/kube-api-server';

jest.setTimeout(60_000);

const FOLLOWERS = 5;

/** A follower of the dispatcher's `?follow=true`: everything it has read, and whether the answer ended. */
function follow(url: string, headers: Record<string, string>) {
  const reader = { text: '', ended: false, status: 0 };
  const controller = new AbortController();
  const done = fetch(url, { headers, signal: controller.signal }).then(async (response) => {
    reader.status = response.status;
    const decoder = new TextDecoder();
    for await (const chunk of response.body!) reader.text += decoder.decode(chunk as Uint8Array, { stream: true });
    reader.ended = true;
  }).catch(() => undefined);
  return { reader, done, close: () => controller.abort() };
}

/**
 * Log follows of a Kubernetes agent share one follow stream to the API server per task on
 * a replica, whatever the number of followers, and each follower sees all the output.
 */
describe('kubernetes log follows shared per task', () => {
  let kube: KubeApiServer;
  let under: KubeDispatcher;

  beforeAll(async () => {
    under = await startKubeDispatcher({ DISPATCHER_BACKENDS: 'kubernetes', DISPATCHER_NAME: 'eu-1' });
    kube = under.kube;
  });
  afterAll(() => under?.close());

  const podLogReads = () => kube.requests.filter((request) => request.path.endsWith('/log')).length;

  /** A Kubernetes task created through the task API, its Job resumed and its pod running with `output` written so far. */
  async function runningTask(output: string) {
    const request = makeTaskRequest({ agent_image: 'registry.example/agents/echo:1', runtime_target: { type: 'kubernetes', namespace: '' } });
    expect((await taskApi(under.system).create(request)).status).toBe(201);
    const job = jobName(request.task_id);
    await waitFor(async () => (kube.store.get('jobs', 'agents', job)?.spec as { suspend?: boolean } | undefined)?.suspend === false, 10_000, 'the Job to be resumed');
    kube.jobs.run('agents', job);
    kube.jobs.setLogs('agents', job, output);
    return { request, job };
  }

  it(`opens one pod log follow for ${FOLLOWERS} followers, streams what the agent writes to each, and ends them all when the task ends`, async () => {
    const { system } = under;
    const { request, job } = await runningTask('starting\n');
    const agentKey = Buffer.from((kube.store.get('secrets', 'agents', secretName(request.task_id))!.data as Record<string, string>)['agent-key'], 'base64').toString();
    expect((await agentApi(system, agentKey).checkin({ task_id: request.task_id })).status).toBe(200);
    await waitForStatus(system, request.task_id, ['running']);
    const readsBefore = podLogReads();

    const followers = Array.from({ length: FOLLOWERS }, () => follow(`${system.dispatcherUrl}/tasks/${request.task_id}/logs?follow=true`, { 'X-API-Key': system.apiKey }));
    await waitFor(() => followers.every((f) => f.reader.text.includes('starting\n')), 10_000, 'every follower to read the output so far');
    kube.jobs.setLogs('agents', job, 'starting\nworking\n');
    await waitFor(() => followers.every((f) => f.reader.text === 'starting\nworking\n'), 10_000, 'every follower to read the new line');
    // Well past the old one-second poll: still one follow stream, and no other log read.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect(kube.logFollowsOpened).toBe(1);
    expect(kube.openLogFollows.size).toBe(1);
    expect(followers.map((f) => f.reader.status)).toEqual(Array(FOLLOWERS).fill(200));

    kube.jobs.setLogs('agents', job, 'starting\nworking\ndone\n');
    expect((await agentApi(system, agentKey).checkback({ task_id: request.task_id, status: 'completed' })).status).toBe(200);
    kube.jobs.finish('agents', job, { exitCode: 0 });
    await waitForStatus(system, request.task_id, ['completed']);
    await waitFor(() => followers.every((f) => f.reader.ended), 15_000, 'every follow to end with the task');
    expect(followers.map((f) => f.reader.text)).toEqual(Array(FOLLOWERS).fill('starting\nworking\ndone\n'));
    // The one follow, plus at most one read past the container's end before the task is seen final.
    expect(kube.logFollowsOpened).toBeLessThanOrEqual(2);
    expect(podLogReads() - readsBefore).toBeLessThanOrEqual(kube.logFollowsOpened + 1);
    expect(kube.openLogFollows.size).toBe(0);
  });

  it('writes an empty line after 15 s without output, so proxies keep a quiet follow open', async () => {
    const { system } = under;
    const { request } = await runningTask('thinking\n');
    const quiet = follow(`${system.dispatcherUrl}/tasks/${request.task_id}/logs?follow=true`, { 'X-API-Key': system.apiKey });
    await waitFor(() => quiet.reader.text === 'thinking\n', 10_000, 'the output so far');
    await new Promise((resolve) => setTimeout(resolve, 12_000));
    expect(quiet.reader.text).toBe('thinking\n');
    await waitFor(() => quiet.reader.text === 'thinking\n\n', 6000, 'the keep-alive line', 250);
    expect(quiet.reader.ended).toBe(false);
    quiet.close();
  });

  it('stops the follow stream to the API server once the last follower leaves', async () => {
    const { system } = under;
    const { request } = await runningTask('hello\n');
    const opened = kube.logFollowsOpened;
    const followers = [1, 2, 3].map(() => follow(`${system.dispatcherUrl}/tasks/${request.task_id}/logs?follow=true`, { 'X-API-Key': system.apiKey }));
    await waitFor(() => followers.every((f) => f.reader.text === 'hello\n'), 10_000, 'every follower to read the output');
    expect(kube.logFollowsOpened - opened).toBe(1);
    for (const f of followers) f.close();
    await waitFor(() => kube.openLogFollows.size === 0, 10_000, 'the pod log follow to close');
  });
});
