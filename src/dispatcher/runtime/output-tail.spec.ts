import { lastLines, OutputTail } from './output-tail';

describe('kept agent output', () => {
  it('keeps only the last bytes', () => {
    const tail = new OutputTail(5);
    tail.append(Buffer.from('abc'));
    tail.append(Buffer.from('defg'));
    expect(tail.toBuffer().toString()).toBe('cdefg');
    tail.append(Buffer.from('0123456789'));
    expect(tail.toBuffer().toString()).toBe('56789');
  });

  it('gives the last N lines', () => {
    expect(lastLines('a\nb\nc\n', 2)).toBe('b\nc\n');
    expect(lastLines('a\nb\nc', 1)).toBe('c');
    expect(lastLines('a\nb\n')).toBe('a\nb\n');
    expect(lastLines('a\n', 5)).toBe('a\n');
  });
});
