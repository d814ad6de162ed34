import fc from 'fast-check';
import { createRootLogger } from './logger';
import { CENSORED, censorSecrets, SECRET_FIELDS, SECRET_HEADERS } from './secret-fields';

/** A JSON logger writing into an array: the lines as the log collector would read them. */
function jsonLogger() {
  const written: string[] = [];
  const logger = createRootLogger('info', 'json', { write: (text: string) => void written.push(text) });
  return { logger, text: () => written.join('') };
}

const secret = fc.string({ minLength: 8, maxLength: 24 }).map((value) => `s3cr3t-${value}`);
const fieldName = fc.constantFrom(...SECRET_FIELDS);
const headerName = fc.constantFrom(...SECRET_HEADERS).chain((name) => fc.constantFrom(name, name.toUpperCase()));
const plainKey = fc.string({ minLength: 1, maxLength: 10 }).filter((key) => !SECRET_FIELDS.has(key) && !['req', 'res', 'level', 'time', 'pid', 'msg', 'hostname'].includes(key));

/** Where a secret may stand in a logged object: on the line, one level down, or as a header of a request or response. */
const placed = fc.oneof(
  fc.record({ field: fieldName, value: secret }).map(({ field, value }) => ({ value, line: { [field]: value } as Record<string, unknown> })),
  fc.record({ key: plainKey, field: fieldName, value: secret }).map(({ key, field, value }) => ({ value, line: { [key]: { [field]: value, kept: 'yes' } } as Record<string, unknown> })),
  fc.record({ key: fc.constantFrom('req', 'res'), header: headerName, value: secret }).map(({ key, header, value }) => ({
    value, line: { [key]: { method: 'POST', headers: { [header]: value, 'content-type': 'application/json' } } } as Record<string, unknown>,
  })),
);

describe('log lines and secrets', () => {
  it('never carry a secret field or header, wherever it stands, and keep every other field', () => {
    fc.assert(fc.property(placed, fc.dictionary(plainKey, fc.oneof(fc.string(), fc.integer(), fc.boolean())), ({ value, line }, others) => {
      const { logger, text } = jsonLogger();
      const given = { ...others, ...line };
      const before = JSON.stringify(given);
      logger.info(given, 'a line');
      const written = text();
      expect(written).not.toContain(value);
      expect(written).toContain(CENSORED);
      const record = JSON.parse(written) as Record<string, unknown>;
      for (const [key, field] of Object.entries(others)) if (!(key in line)) expect(record[key]).toEqual(field);
      // The caller's object is left as it was.
      expect(JSON.stringify(given)).toBe(before);
    }), { numRuns: 300 });
  });

  it('give back the same object when it holds no secret', () => {
    const line = { task: 't-1', nested: { status: 'completed' }, req: { headers: { 'content-type': 'text/plain' } } };
    expect(censorSecrets(line)).toBe(line);
  });
});
