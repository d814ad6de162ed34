import { loadPglite } from './embedded-postgres';

describe('loading the embedded PostgreSQL', () => {
  const missing = (code: string) => async (name: string) => {
    throw Object.assign(new Error(`Cannot find package '${name}'`), { code });
  };

  it.each(['ERR_MODULE_NOT_FOUND', 'MODULE_NOT_FOUND'])('says what to do when PGlite is not installed (%s)', async (code) => {
    await expect(loadPglite(missing(code))).rejects.toThrow(
      'DATABASE_URL is not set and the embedded PostgreSQL (@electric-sql/pglite, an optional dependency) is not installed here: set DATABASE_URL',
    );
  });

  it('passes any other load failure on unchanged', async () => {
    await expect(loadPglite(missing('ERR_DLOPEN_FAILED'))).rejects.toThrow("Cannot find package '@electric-sql/pglite'");
  });
});
