import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import pino from 'pino';
import { FlushWhenWritten } from './flush-when-written';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** pino's own destination on a file, as the server builds it for standard output, with its writes counted. */
function fileOutput(minLength: number, maxWaitMs: number) {
  const dir = mkdtempSync(path.join(tmpdir(), 'flush-when-written-'));
  const file = path.join(dir, 'out.log');
  const sink = pino.destination({ dest: file, sync: false, minLength });
  const writes: number[] = [];
  sink.on('write', (bytes: number) => writes.push(bytes));
  const output = new FlushWhenWritten(sink, maxWaitMs);
  let closed = false;
  return {
    output,
    writes,
    text: () => readFileSync(file, 'utf8'),
    ready: () => new Promise((resolve) => sink.once('ready', resolve)),
    close: () => {
      if (closed) return;
      closed = true;
      sink.flushSync();
      sink.end();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

type FileOutput = ReturnType<typeof fileOutput>;

/** Runs `check` on a ready file output, and closes it whatever the check does. */
async function withOutput(minLength: number, maxWaitMs: number, check: (out: FileOutput) => Promise<void>): Promise<void> {
  const out = fileOutput(minLength, maxWaitMs);
  await out.ready();
  try {
    await check(out);
  } finally {
    out.close();
  }
}

describe('log lines written in blocks', () => {
  it('keeps a line back, then writes it within the wait, in one block with its neighbours', () => withOutput(4096, 50, async (out) => {
    out.output.write('{"msg":"one"}\n');
    out.output.write('{"msg":"two"}\n');
    expect(out.text()).toBe('');
    await sleep(250);
    expect(out.text()).toBe('{"msg":"one"}\n{"msg":"two"}\n');
    expect(out.writes.filter((bytes) => bytes > 0)).toEqual([28]);
  }));

  it('writes nothing at all while nothing is logged', () => withOutput(4096, 20, async (out) => {
    out.output.write('{"msg":"last"}\n');
    await sleep(200);
    const settled = out.writes.length;
    // sonic-boom's periodicFlush at this interval would have written about 25 (empty) blocks here.
    await sleep(500);
    expect(out.writes.length).toBe(settled);
    expect(out.text()).toBe('{"msg":"last"}\n');
  }));

  it('writes a full block at once, and the lines that came while it was written after the wait', () => withOutput(64, 1000, async (out) => {
    const lines = Array.from({ length: 40 }, (_, index) => `{"n":${index}}\n`);
    for (const line of lines) out.output.write(line);
    await sleep(200);
    // Long before the timer: the blocks past 64 bytes went out on their own.
    expect(out.text().length).toBeGreaterThanOrEqual(64);
    expect(lines.join('').startsWith(out.text())).toBe(true);
    await sleep(1300);
    expect(out.text()).toBe(lines.join(''));
  }));

  it('calls back a flush with a callback (pino\'s logger.flush) once what waits is written', () => withOutput(4096, 10_000, async (out) => {
    out.output.write('{"msg":"asked for"}\n');
    const error = await new Promise<Error | null | undefined>((resolve) => out.output.flush(resolve));
    // sonic-boom answers null or nothing for no error.
    expect(error ?? null).toBeNull();
    expect(out.text()).toBe('{"msg":"asked for"}\n');
  }));

  it('lets a destination that was ended meanwhile be, rather than throw from its timer', () => withOutput(4096, 20, async (out) => {
    out.output.write('{"msg":"before the end"}\n');
    out.close();
    await sleep(100);
    const called = await new Promise<boolean>((resolve) => out.output.flush(() => resolve(true)));
    expect(called).toBe(true);
  }));
});
