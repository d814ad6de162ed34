import { checkInDispatcher, operator } from '../harness/controller-tasks';
import { http } from '../harness/http';
import { ResponseValidator } from '../harness/openapi-validator';
import { RecordingDispatcher } from '../harness/recording-dispatcher';
import { startTestSystem, TestSystem } from '../harness/system';
import { waitFor } from '../harness/wait';
import { controllerClient } from '../openapi/clients';
import { accessTour } from '../openapi/controller-tour-access';
import { workTour } from '../openapi/controller-tour-work';

const FORGE_SECRET = 'forge-secret-for-the-document-tour';

/**
 * The controller's real answers against its served OpenAPI document: every operation is
 * called through the client typed from that document, for its success and the refusals the
 * contract names, and each answer's status, challenge headers, media type and body must be
 * what the document says.
 */
describe('controller answers, as its OpenAPI document says', () => {
  let system: TestSystem;
  let dispatcher: RecordingDispatcher;
  let validator: ResponseValidator;

  beforeAll(async () => {
    system = await startTestSystem({ role: 'controller', env: { FORGE_WEBHOOK_SECRET: FORGE_SECRET, AUTH_FAILURE_LIMIT: '30' } });
    dispatcher = await new RecordingDispatcher().start();
    await checkInDispatcher(system, { name: 'recorder', endpoint_url: dispatcher.url, heartbeat_interval_seconds: 3600 });
    const document = await http('GET', `${system.controllerUrl}/api/docs/openapi.json`);
    expect(document.status).toBe(200);
    validator = new ResponseValidator(document.body);
  });
  afterAll(async () => {
    await dispatcher?.stop();
    await system?.close();
  });

  const client = () => {
    const typed = controllerClient(system.controllerUrl);
    typed.use(validator.middleware());
    return typed;
  };

  it('answers every operation, and each refusal, within the document', async () => {
    const reader = await accessTour(client(), operator(system));
    await workTour(client(), {
      operator: operator(system),
      reader,
      signingKey: system.config.callbackSigningKey!,
      forgeSecret: FORGE_SECRET,
      callbackTokenOf: (guid) => waitFor(async () => dispatcher.taskRequests.find((request) => request.body.task_id === guid)?.body.callback_token ?? null, 20_000, `task ${guid} dispatched`),
    });
    expect(validator.problems).toEqual([]);
    expect(validator.operationsWithoutSuccess()).toEqual([]);
  });

  it('documents the throttle: 429 with Retry-After once failures pass the limit', async () => {
    const typed = client();
    let status = 0;
    for (let attempt = 0; attempt < 40 && status !== 429; attempt += 1) {
      status = (await typed.GET('/api/v1/auth/whoami', { headers: { authorization: 'Token wrong' } })).response.status;
    }
    expect(status).toBe(429);
    expect(validator.problems).toEqual([]);
  });
});
