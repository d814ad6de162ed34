import { GroupCommit } from './group-commit';

/** A write that records each batch and holds it until released. */
function heldWrites() {
  const batches: number[][] = [];
  const releases: (() => void)[] = [];
  const write = (items: number[]) => {
    batches.push(items);
    return new Promise<string[]>((resolve, reject) => {
      releases.push(() => (items.includes(-1) ? reject(new Error(`refused ${items.join(',')}`)) : resolve(items.map((item) => `stored ${item}`))));
    });
  };
  const releaseAll = async () => {
    while (releases.length > 0) {
      releases.splice(0).forEach((release) => release());
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  return { batches, write, releaseAll };
}

describe('GroupCommit', () => {
  it('writes a lone item at once, and what comes while writes are under way in the next write, up to the batch size', async () => {
    const held = heldWrites();
    const commit = new GroupCommit(held.write, { maxBatch: 3, maxInFlight: 2 });
    const first = commit.add(1);
    expect(held.batches).toEqual([[1]]);
    const rest = [2, 3, 4, 5, 6, 7].map((item) => commit.add(item));
    expect(held.batches).toEqual([[1], [2]]);
    await held.releaseAll();
    expect(held.batches).toEqual([[1], [2], [3, 4, 5], [6, 7]]);
    expect(await first).toBe('stored 1');
    expect(await Promise.all(rest)).toEqual([2, 3, 4, 5, 6, 7].map((item) => `stored ${item}`));
    await commit.idle();
  });

  it('fails only the item a write refuses: a refused batch is written again one item at a time', async () => {
    const held = heldWrites();
    const commit = new GroupCommit(held.write, { maxBatch: 10, maxInFlight: 1 });
    const answers = [1, 2, -1, 3].map((item) => commit.add(item).catch((error: Error) => error.message));
    await held.releaseAll();
    expect(await Promise.all(answers)).toEqual(['stored 1', 'stored 2', 'refused -1', 'stored 3']);
    expect(held.batches).toEqual([[1], [2, -1, 3], [2], [-1], [3]]);
  });

  it('is idle once every item added before is written', async () => {
    const held = heldWrites();
    const commit = new GroupCommit(held.write, { maxBatch: 2, maxInFlight: 1 });
    const answers = [1, 2, 3].map((item) => commit.add(item));
    let idle = false;
    const waiting = commit.idle().then(() => (idle = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(idle).toBe(false);
    await held.releaseAll();
    await waiting;
    expect(await Promise.all(answers)).toHaveLength(3);
  });
});
