import { demultiplexLogs, lastBytes } from './docker-logs';

function frame(stream: 1 | 2, text: string): Buffer {
  const payload = Buffer.from(text);
  const header = Buffer.alloc(8);
  header[0] = stream;
  header.writeUInt32BE(payload.length, 4);
  return Buffer.concat([header, payload]);
}

describe('container log demultiplexing', () => {
  it('joins stdout and stderr frames in the order the engine sent them', () => {
    const raw = Buffer.concat([frame(1, 'out 1\n'), frame(2, 'err 1\n'), frame(1, 'out 2\n')]);
    expect(demultiplexLogs(raw).toString()).toBe('out 1\nerr 1\nout 2\n');
  });

  it('takes output that is not framed (a TTY container) as it is', () => {
    expect(demultiplexLogs(Buffer.from('plain text\n')).toString()).toBe('plain text\n');
  });

  it('keeps a truncated last frame rather than dropping it', () => {
    const raw = Buffer.concat([frame(1, 'whole\n'), frame(2, 'cut short\n').subarray(0, 12)]);
    expect(demultiplexLogs(raw).toString()).toBe('whole\ncut ');
  });

  it('keeps only the last bytes of long output', () => {
    expect(lastBytes(Buffer.from('0123456789'), 4)).toBe('6789');
  });
});
