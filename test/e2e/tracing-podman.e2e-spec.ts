import { randomBytes } from 'node:crypto';
import Docker from 'dockerode';
import { nodeSdkAgentImage } from '../harness/node-agent-image';
import { exportTo, LoggedServer, OtlpReceiver } from '../harness/otlp';
import { removeManagedContainers, requireContainerEngine } from '../harness/podman';
import { testEnv } from '../harness/system';
import { runTracedWebhookTask } from '../harness/traced-webhook';
import { waitFor } from '../harness/wait';

// The server runs from dist/ (the SDK must patch modules before they load): `npm run build` first.
jest.setTimeout(180_000);

const SERVER = 2;
const SENDER_TRACE = randomBytes(16).toString('hex');
const SENDER_SPAN = randomBytes(8).toString('hex');

/**
 * The docker engine against Podman's Docker-compatible API: the agent is a Node program using
 * the agent SDK inside a container, so its check-in, progress and check-back join the webhook's
 * trace only if TRACEPARENT reached the container and the SDK sent it on its calls.
 */
describe('one trace per task, into an agent in a Podman container', () => {
  const dispatcherName = `atc-e2e-trace-${randomBytes(4).toString('hex')}`;
  let docker: Docker;
  let receiver: OtlpReceiver;
  let server: LoggedServer;
  let env: Record<string, string | undefined>;
  let url: string;
  let image: string;

  beforeAll(async () => {
    const engine = await requireContainerEngine();
    docker = engine.docker;
    image = await nodeSdkAgentImage(docker);
    receiver = await OtlpReceiver.start();
    env = await testEnv({
      role: 'all',
      env: {
        LOG_LEVEL: 'info', LOG_FORMAT: 'json', FORGE_WEBHOOK_SECRET: 'forge-secret', LOCAL_ENGINE: 'docker', DOCKER_HOST: engine.dockerHost, DISPATCHER_NAME: dispatcherName,
        // The SDK's default encoding, where the process-engine spec sends JSON.
        ...exportTo(receiver), OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf',
      },
    });
    url = `http://127.0.0.1:${env.CONTROLLER_PORT}`;
    server = await new LoggedServer(env).start(`${url}/health/`);
  });
  afterAll(async () => {
    await server?.stop();
    await receiver?.stop();
    if (docker) await removeManagedContainers(docker, dispatcherName);
  });

  it('has the SDK\'s check-in, progress and check-back from inside the container under the dispatcher\'s start span', async () => {
    const { guid, view } = await runTracedWebhookTask({ env, url }, { workflowId: 'traced-podman', agentImage: image, traceparent: `00-${SENDER_TRACE}-${SENDER_SPAN}-01`, timeoutMs: 120_000 });
    expect(view).toMatchObject({ status: 'completed', trace_id: SENDER_TRACE });

    const spans = await waitFor(async () => {
      const all = await receiver.spans();
      return all.some((span) => span.traceId === SENDER_TRACE && span.name === 'close task') ? all.filter((span) => span.traceId === SENDER_TRACE) : null;
    }, 20_000, 'the close span to be exported');
    const ingest = spans.find((span) => /^POST \/api\/v1\/webhooks/.test(span.name) && span.kind === SERVER);
    expect(ingest?.parentSpanId).toBe(SENDER_SPAN);
    const starts = spans.filter((span) => span.name === 'start agent');
    expect(starts).toHaveLength(1);
    expect(starts[0].attributes).toMatchObject({ 'task.dispatcher_task_id': guid, 'task.agent_image': image });
    for (const call of ['POST /agent/checkin', 'POST /agent/progress', 'POST /agent/checkback']) {
      expect(spans.filter((span) => span.name === call && span.kind === SERVER && span.parentSpanId === starts[0].spanId)).toHaveLength(1);
    }
    expect(spans.some((span) => span.name === 'close task' && span.attributes['task.status'] === 'completed')).toBe(true);

    // The container was started with the start span's context in its environment.
    expect(await agentOutput(url, { authorization: `Token ${env.API_TOKEN}` }, guid)).toContain(`TRACEPARENT 00-${SENDER_TRACE}-${starts[0].spanId}-01`);
  });
});

/** The agent's own output, as the task's log endpoint serves it. */
async function agentOutput(url: string, headers: Record<string, string>, guid: string): Promise<string> {
  const answer = await fetch(`${url}/api/v1/tasks/${guid}/logs/`, { headers });
  return answer.text();
}
