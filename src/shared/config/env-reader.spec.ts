import { Reader } from './env-reader';

describe('Reader', () => {
  it('gives the fallback for a variable unset or blank', () => {
    const r = new Reader({ BLANK: '  ' });
    expect([r.int('BLANK', 7, 0, 9), r.bool('UNSET', true), r.url('UNSET', null), r.stringMap('UNSET')]).toEqual([7, true, null, {}]);
    expect(r.problems).toEqual([]);
  });

  it('takes whole numbers in bounds only, written in decimal', () => {
    const r = new Reader({ A: ' 42 ', B: '0x10', C: '1e3', D: '12.5', E: '101' });
    expect(['A', 'B', 'C', 'D', 'E'].map((name) => r.int(name, 1, 0, 100))).toEqual([42, 1, 1, 1, 1]);
    expect(r.problems).toEqual([
      'B must be a whole number from 0 to 100 (got "0x10")',
      'C must be a whole number from 0 to 100 (got "1e3")',
      'D must be a whole number from 0 to 100 (got "12.5")',
      'E must be a whole number from 0 to 100 (got "101")',
    ]);
  });

  it('reads booleans in any case', () => {
    const r = new Reader({ A: 'TRUE', B: 'No', C: '1', D: 'on' });
    expect(['A', 'B', 'C', 'D'].map((name) => r.bool(name, false))).toEqual([true, false, true, false]);
    expect(r.problems).toEqual(['D must be true or false (got "on")']);
  });

  it('keeps URLs of the allowed protocols without trailing slashes', () => {
    const r = new Reader({ A: 'https://x.test/base//', B: 'postgres://u:p@127.0.0.1:5432/db', C: 'ftp://x.test', D: 'not a url' });
    expect(r.url('A', null)).toBe('https://x.test/base');
    expect(r.url('B', null, ['postgres:', 'postgresql:'])).toBe('postgres://u:p@127.0.0.1:5432/db');
    expect(r.url('C', 'fallback')).toBe('fallback');
    expect(r.url('D', null)).toBeNull();
    expect(r.problems).toEqual([
      'C must be a URL with http: or https: (got "ftp://x.test")',
      'D must be a URL with http: or https: (got "not a url")',
    ]);
  });

  it('reads JSON maps of strings and comma lists of known names', () => {
    const r = new Reader({ MAP: '{"zone":"a"}', BAD_MAP: '{"zone":1}', LIST: 'kubernetes, local,local', EMPTY: ' , ' });
    expect(r.stringMap('MAP')).toEqual({ zone: 'a' });
    expect(r.stringMap('BAD_MAP')).toEqual({});
    expect(r.list('LIST', ['local'], ['local', 'kubernetes'])).toEqual(['kubernetes', 'local']);
    expect(r.list('EMPTY', ['local'], ['local', 'kubernetes'])).toEqual(['local']);
    expect(r.problems).toEqual([
      'BAD_MAP must be a JSON object of strings (got "{"zone":1}")',
      'EMPTY must be a comma-separated list of local, kubernetes (got ",")',
    ]);
  });
});
