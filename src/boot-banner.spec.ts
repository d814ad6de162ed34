import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { bannerLines, BannerFacts } from './boot-banner';
import { loadConfig } from './shared/config/config';
import { withEmbeddedSecrets } from './shared/config/secrets';

const scratch = () => fs.mkdtempSync(path.join(os.tmpdir(), 'banner-'));

/** The facts main.ts passes, from a real configuration with its embedded secrets. */
function facts(role: string, env: Record<string, string> = {}): BannerFacts {
  const argv = ['--role', role];
  const secrets = withEmbeddedSecrets({ DATA_DIR: scratch(), ...env }, argv);
  const config = loadConfig(secrets.env, argv);
  return { config, secretsFile: secrets.file, apiTokenInFile: !env.API_TOKEN, consoleDir: scratch() };
}

describe('the boot banner', () => {
  it('names both API docs, the secrets file and the demo command for the all-in-one server', () => {
    const given = facts('all', { CONTROLLER_PORT: '9100', DISPATCHER_PORT: '9101' });
    expect(bannerLines(given)).toEqual([
      'API docs: http://127.0.0.1:9100/api/docs (controller)',
      'API docs: http://127.0.0.1:9101/api/docs (dispatcher)',
      `Operator token: API_TOKEN in ${given.secretsFile}`,
      `Try it: CONTROLLER_URL=http://127.0.0.1:9100 DATA_DIR=${given.config.dataDir} npm run demo`,
    ]);
  });

  it('never prints the token, and says so when it comes from the environment', () => {
    const given = facts('controller', { API_TOKEN: 'operator-token-value-never-printed', HOST: '0.0.0.0' });
    const lines = bannerLines(given).join('\n');
    expect(lines).not.toContain('operator-token-value-never-printed');
    expect(lines).toContain('Operator token: API_TOKEN as set in the environment');
    expect(lines).toContain('API docs: http://127.0.0.1:8000/api/docs (controller)');
  });

  it('names the console only once its built files are there', () => {
    const given = facts('controller');
    expect(bannerLines(given).some((line) => line.startsWith('Console:'))).toBe(false);
    fs.writeFileSync(path.join(given.consoleDir!, 'index.html'), '<!doctype html>');
    expect(bannerLines(given)).toContain('Console: http://127.0.0.1:8000/console/');
  });

  it('gives a dispatcher alone its docs only', () => {
    expect(bannerLines(facts('dispatcher', { CONTROLLER_URL: 'http://127.0.0.1:8000' }))).toEqual(['API docs: http://127.0.0.1:8080/api/docs (dispatcher)']);
  });
});
