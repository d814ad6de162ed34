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
  return {
    output,
    writes,
    text: () => readFileSync(file, 'utf8'),
    ready: () => new Promise((resolve) => sink.once('ready', resolve)),
    close: () => {
      sink.flushSync();
      sink.end();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

describe('log lines written in blocks', () => {
  it('keeps a line back, then writes it within the wait, in one block with its neighbours', async () => {
    const out = fileOutput(4096, 50);
    await out.ready();
    try {
      out.output.write('{"msg":"one"}\n');
      out.output.write('{"msg":"two"}\n');
      expect(out.text()).toBe('');
      await sleep(250);
      expect(out.text()).toBe('{"msg":"one"}\n{"msg":"two"}\n');
      expect(out.writes.filter((bytes) => bytes > 0)).toEqual([28]);
    } finally {
      out.close();
    }
  });

  it('writes nothing at all while nothing is logged', async () => {
    const out = fileOutput(4096, 20);
    await out.ready();
    try {
      out.output.write('{"msg":"last"}\n');
      await sleep(200);
      const settled = out.writes.length;
      // sonic-boom's periodicFlush at this interval would have written about 25 (empty) blocks here.
      await sleep(500);
      expect(out.writes.length).toBe(settled);
      expect(out.text()).toBe('{"msg":"last"}\n');
    } finally {
      out.close();
    }
  });

  it('writes a full block at once, and the lines that came while it was written after the wait', async () => {
    const out = fileOutput(64, 1000);
    await out.ready();
    try {
      const lines = Array.from({ length: 40 }, (_, index) => `{"n":${index}}\n`);
      for (const line of lines) out.output.write(line);
      await sleep(200);
      // Long before the timer: the blocks past 64 bytes went out on their own.
      expect(out.text().length).toBeGreaterThanOrEqual(64);
      expect(lines.join('').startsWith(out.text())).toBe(true);
      await sleep(1300);
      expect(out.text()).toBe(lines.join(''));
    } finally {
      out.close();
    }
  });

  it('lets a destination that was ended meanwhile be, rather than throw from its timer', async () => {
    const out = fileOutput(4096, 20);
    await out.ready();
    out.output.write('{"msg":"before the end"}\n');
    out.close();
    await sleep(100);
    expect(() => out.output.flush()).not.toThrow();
  });
});
