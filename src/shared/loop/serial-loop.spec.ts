import { SerialLoop } from './serial-loop';

/** A round that stays open until the test lets it finish. */
function gatedRounds() {
  const gates: (() => void)[] = [];
  let running = 0;
  let overlapped = false;
  const round = async () => {
    running += 1;
    overlapped ||= running > 1;
    await new Promise<void>((resolve) => gates.push(resolve));
    running -= 1;
  };
  return {
    round,
    started: () => gates.length,
    overlapped: () => overlapped,
    finishRound: async (index: number) => {
      gates[index]();
      // Lets the loop's own then/finally run, as the event loop would.
      for (let i = 0; i < 5; i++) await Promise.resolve();
    },
  };
}

describe('SerialLoop', () => {
  it('runs a round at once on a kick', () => {
    const rounds = gatedRounds();
    new SerialLoop(rounds.round, fail).kick();
    expect(rounds.started()).toBe(1);
  });

  it('starts one more round right after the running one when kicked during it, never two at once', async () => {
    const rounds = gatedRounds();
    const loop = new SerialLoop(rounds.round, fail);
    loop.kick();
    loop.kick();
    loop.kick();
    expect(rounds.started()).toBe(1);
    await rounds.finishRound(0);
    expect(rounds.started()).toBe(2);
    await rounds.finishRound(1);
    expect(rounds.started()).toBe(2);
    expect(rounds.overlapped()).toBe(false);
  });

  it('does not lose a kick that arrives while the follow-up round runs', async () => {
    const rounds = gatedRounds();
    const loop = new SerialLoop(rounds.round, fail);
    loop.kick();
    loop.kick();
    await rounds.finishRound(0);
    loop.kick();
    await rounds.finishRound(1);
    expect(rounds.started()).toBe(3);
  });

  it('reports a failed round and keeps serving kicks', async () => {
    const errors: unknown[] = [];
    let calls = 0;
    const loop = new SerialLoop(async () => {
      calls += 1;
      if (calls === 1) throw new Error('database away');
    }, (error) => errors.push(error));
    loop.kick();
    loop.kick();
    await new Promise((resolve) => setImmediate(resolve));
    expect(errors).toEqual([new Error('database away')]);
    expect(calls).toBe(2);
  });

  it('stop waits for the running round and ignores later kicks', async () => {
    const rounds = gatedRounds();
    const loop = new SerialLoop(rounds.round, fail);
    loop.kick();
    let stopped = false;
    const stopping = loop.stop().then(() => (stopped = true));
    loop.kick();
    await Promise.resolve();
    expect(stopped).toBe(false);
    await rounds.finishRound(0);
    await stopping;
    expect(rounds.started()).toBe(1);
  });
});

function fail(error: unknown): never {
  throw error;
}
