import { randomUUID } from 'node:crypto';
import { EarlyBriefs } from '../../src/controller/tasks/early-briefs';
import { loadConfig } from '../../src/shared/config/config';
import { ObjectStorage, readAll } from '../../src/shared/storage/object-storage';
import { createObjectStorage } from '../../src/shared/storage/storage.module';
import { freePort } from '../harness/ports';
import { testEnv } from '../harness/system';

/** A new task's inline brief, written while its dispatch round claims it, against the S3 server. */
describe('early brief writes', () => {
  let storage: ObjectStorage;

  beforeAll(async () => {
    storage = createObjectStorage(loadConfig(await testEnv({ role: 'controller', storage: 's3' })));
  });

  const taskWithBrief = (brief: unknown = { prompt: 'Review the change.', n: Math.random() }) => {
    const guid = randomUUID();
    return { guid, briefKey: `briefs/${guid}.json`, briefPending: JSON.stringify(brief) };
  };
  const stored = async (key: string) => (await storage.exists(key)) ? (await readAll((await storage.get(key))!)).toString('utf8') : null;

  it('writes nothing while no dispatcher is online: a flood with none up costs no storage write', async () => {
    const early = new EarlyBriefs(storage);
    const task = taskWithBrief();
    early.start([task]);
    expect(early.take(task.guid)).toBeUndefined();
    expect(await stored(task.briefKey)).toBeNull();
  });

  it('hands the write under way to the batch once, and the stored object is the brief', async () => {
    const early = new EarlyBriefs(storage);
    early.setDispatchersOnline(true);
    const task = taskWithBrief({ prompt: 'Summarise the pull request.', files: ['a.ts', 'b.ts'] });
    const none = { ...taskWithBrief(), briefPending: null };
    early.start([task, none]);
    expect(early.size).toBe(1);
    expect(early.take(none.guid)).toBeUndefined();
    await expect(early.take(task.guid)).resolves.toBe(true);
    expect(await stored(task.briefKey)).toBe(task.briefPending);
    expect(early.take(task.guid)).toBeUndefined();
  });

  it('answers false for a write that failed, so the batch writes the brief itself', async () => {
    const unreachable = createObjectStorage(loadConfig(await testEnv({
      role: 'controller', storage: 's3', env: { S3_ENDPOINT: `http://127.0.0.1:${await freePort()}` },
    })));
    const early = new EarlyBriefs(unreachable);
    early.setDispatchersOnline(true);
    const task = taskWithBrief();
    early.start([task]);
    await expect(early.take(task.guid)).resolves.toBe(false);
    expect(await stored(task.briefKey)).toBeNull();
  });

  it('forgets a write no batch took within 30 s, and keeps at most 1,000', async () => {
    const early = new EarlyBriefs(storage);
    early.setDispatchersOnline(true);
    const old = taskWithBrief();
    early.start([old], 1_000);
    const fresh = Array.from({ length: 1000 }, () => taskWithBrief());
    early.start(fresh, 31_001);
    expect(early.take(old.guid)).toBeUndefined();
    expect(early.size).toBe(1000);
    const over = taskWithBrief();
    early.start([over], 31_002);
    expect(early.take(over.guid)).toBeUndefined();
    expect(await Promise.all(fresh.slice(0, 3).map((task) => early.take(task.guid)))).toEqual([true, true, true]);
    expect(await stored(fresh[2].briefKey)).toBe(fresh[2].briefPending);
    await Promise.all(fresh.slice(3).map((task) => early.take(task.guid)));
  }, 60_000);
});
