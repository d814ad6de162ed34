import Docker from 'dockerode';
import { demultiplexLogs, lastBytes } from './docker-logs';

// The modem only parses here; it never connects.
const modem = new Docker({ socketPath: '/nonexistent.sock' }).modem;

function frame(stream: 1 | 2, text: string): Buffer {
  const payload = Buffer.from(text);
  const header = Buffer.alloc(8);
  header[0] = stream;
  header.writeUInt32BE(payload.length, 4);
  return Buffer.concat([header, payload]);
}

describe('container log demultiplexing', () => {
  it('joins stdout and stderr frames in the order the engine sent them', async () => {
    const raw = Buffer.concat([frame(1, 'out 1\n'), frame(2, 'err 1\n'), frame(1, 'out 2\n')]);
    expect((await demultiplexLogs(modem, raw)).toString()).toBe('out 1\nerr 1\nout 2\n');
  });

  it('takes output that is not framed (a TTY container) as it is', async () => {
    expect((await demultiplexLogs(modem, Buffer.from('plain text\n'))).toString()).toBe('plain text\n');
  });

  it('reads empty output and frames of empty payloads', async () => {
    expect((await demultiplexLogs(modem, Buffer.alloc(0))).length).toBe(0);
    expect((await demultiplexLogs(modem, Buffer.concat([frame(1, ''), frame(2, 'x')]))).toString()).toBe('x');
  });

  it('drops an incomplete last frame, which only a cut connection leaves', async () => {
    const raw = Buffer.concat([frame(1, 'whole\n'), frame(2, 'cut short\n').subarray(0, 12)]);
    expect((await demultiplexLogs(modem, raw)).toString()).toBe('whole\n');
  });

  it('keeps only the last bytes of long output', () => {
    expect(lastBytes(Buffer.from('0123456789'), 4)).toBe('6789');
  });
});
