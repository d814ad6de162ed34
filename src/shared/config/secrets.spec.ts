import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { withEmbeddedSecrets } from './secrets';

describe('withEmbeddedSecrets', () => {
  let dataDir: string;
  beforeEach(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'secrets-'));
  });
  afterEach(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it('generates missing secrets once, keeps them private, and reuses them on the next boot', () => {
    const first = withEmbeddedSecrets({ DATA_DIR: dataDir, API_TOKEN: 'given' });
    expect(first.generated).toEqual(['SECRET_KEY', 'CALLBACK_SIGNING_KEY', 'DISPATCHER_API_KEY', 'API_KEY', 'AGENT_KEY']);
    expect(first.env.API_TOKEN).toBe('given');
    expect(first.env.AGENT_KEY).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(fs.statSync(first.file).mode & 0o777).toBe(0o600);

    const second = withEmbeddedSecrets({ DATA_DIR: dataDir, API_TOKEN: 'given' });
    expect(second.generated).toEqual([]);
    expect(second.env.AGENT_KEY).toBe(first.env.AGENT_KEY);
  });

  it('does not invent a signing key for a role that runs alone', () => {
    const result = withEmbeddedSecrets({ DATA_DIR: dataDir, ROLE: 'controller' });
    expect(result.generated).toEqual(['API_TOKEN', 'SECRET_KEY', 'DISPATCHER_API_KEY']);
  });

  it('leaves production alone so that validation refuses missing secrets', () => {
    const result = withEmbeddedSecrets({ DATA_DIR: dataDir, NODE_ENV: 'production' });
    expect(result.generated).toEqual([]);
    expect(fs.existsSync(result.file)).toBe(false);
  });
});
