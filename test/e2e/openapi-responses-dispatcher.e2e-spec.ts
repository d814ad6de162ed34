import { createObjectStorage } from '../../src/shared/storage/storage.module';
import { http } from '../harness/http';
import { ResponseValidator } from '../harness/openapi-validator';
import { startTestSystem, TestSystem } from '../harness/system';
import { dispatcherClient } from '../openapi/clients';
import { dispatcherTour } from '../openapi/dispatcher-tour';

const IDLE_IMAGE = 'tour/idle';

/**
 * The dispatcher's real answers against its served OpenAPI document: every operation called
 * through the client typed from that document, for its success and the refusals the contract
 * names, each answer checked against the document (status, challenge headers, media type, body).
 */
describe('dispatcher answers, as its OpenAPI document says', () => {
  let system: TestSystem;

  beforeAll(async () => {
    // An agent that never calls back, so the tour plays the agent's part itself.
    const idle = `${process.execPath} -e setTimeout(()=>{},600000)`;
    system = await startTestSystem({ role: 'dispatcher', env: { LOCAL_IMAGE_COMMANDS: JSON.stringify({ [IDLE_IMAGE]: idle }) } });
  });
  afterAll(() => system?.close());

  it('answers every operation, and each refusal, within the document', async () => {
    const document = await http('GET', `${system.dispatcherUrl}/api/docs/openapi.json`);
    expect(document.status).toBe(200);
    const validator = new ResponseValidator(document.body);
    const client = dispatcherClient(system.dispatcherUrl);
    client.use(validator.middleware());
    const storage = createObjectStorage(system.config);
    await dispatcherTour(client, {
      apiKey: system.apiKey,
      agentKey: system.agentKey,
      idleImage: IDLE_IMAGE,
      putBrief: async (key) => void (await storage.put(key, Buffer.from('{"prompt":"tour"}'))),
    });
    expect(validator.problems).toEqual([]);
    expect(validator.operationsWithoutSuccess()).toEqual([]);
  });
});
