import { createObjectStorage } from '../../src/shared/storage/storage.module';
import { http } from '../harness/http';
import { ResponseValidator } from '../harness/openapi-validator';
import { startTestSystem, TestSystem } from '../harness/system';
import { dispatcherClient } from '../openapi/clients';
import { dispatcherTour } from '../openapi/dispatcher-tour';
import { claimTour } from '../openapi/dispatcher-claim-tour';
import { makePool, poolAgents, waitForStarted } from '../harness/warm-pools';

const IDLE_IMAGE = 'tour/idle';
const WARM_IMAGE = 'tour/warm';

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
    system = await startTestSystem({
      role: 'dispatcher',
      env: {
        LOCAL_IMAGE_COMMANDS: JSON.stringify({ [IDLE_IMAGE]: idle, [WARM_IMAGE]: idle }),
        WARM_POOLS: JSON.stringify([makePool({ name: 'tour', image: WARM_IMAGE, size: 1 })]),
      },
    });
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
    await claimTour(client, {
      apiKey: system.apiKey,
      agentKey: system.agentKey,
      pool: { name: 'tour', image: WARM_IMAGE },
      idleAgentId: async () => {
        await waitForStarted(system, 'tour', 1);
        return (await poolAgents(system)).find((row) => row.state === 'idle' && row.runtime_ref)!.agent_id;
      },
    });
    expect(validator.problems).toEqual([]);
    expect(validator.operationsWithoutSuccess()).toEqual([]);
  });
});
