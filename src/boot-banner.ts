import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Logger } from 'pino';
import { CONSOLE_DIR } from './controller/console/console-static';
import { AppConfig } from './shared/config/config';

export interface BannerFacts {
  config: AppConfig;
  /** `<DATA_DIR>/secrets.json`. */
  secretsFile: string;
  /** True when API_TOKEN came from that file (embedded mode), not from the environment. */
  apiTokenInFile: boolean;
  /** Where the console's built files would be; it is named only when they are there. */
  consoleDir?: string;
}


/**
 * The last lines of the boot, for the person who just started it: where the API docs are
 * (and the console), where the operator token is kept (a path, never the value) and the
 * command that shows the system at work.
 */
export function bannerLines(facts: BannerFacts): string[] {
  const { config } = facts;
  const host = ['0.0.0.0', '::', ''].includes(config.host) ? '127.0.0.1' : config.host;
  const controller = `http://${host}:${config.controllerPort}`;
  const dispatcher = `http://${host}:${config.dispatcherPort}`;
  const lines: string[] = [];
  if (config.role !== 'dispatcher') lines.push(`API docs: ${controller}/api/docs (controller)`);
  if (config.role !== 'controller') lines.push(`API docs: ${dispatcher}/api/docs (dispatcher)`);
  if (config.role === 'dispatcher') return lines;
  const consoleDir = facts.consoleDir ?? CONSOLE_DIR;
  if (fs.existsSync(path.join(consoleDir, 'index.html'))) lines.push(`Console: ${controller}/console/`);
  lines.push(
    facts.apiTokenInFile
      ? `Operator token: API_TOKEN in ${facts.secretsFile}`
      : 'Operator token: API_TOKEN as set in the environment',
  );
  lines.push(`Try it: ${demoCommand(config, controller)}`);
  return lines;
}

/** `npm run demo`, with the settings it needs when they are not its defaults. */
function demoCommand(config: AppConfig, controller: string): string {
  const settings: string[] = [];
  if (controller !== 'http://127.0.0.1:8000') settings.push(`CONTROLLER_URL=${controller}`);
  if (path.resolve(config.dataDir) !== path.resolve('.data')) settings.push(`DATA_DIR=${config.dataDir}`);
  return [...settings, 'npm run demo'].join(' ');
}

export function logBanner(logger: Logger, facts: BannerFacts): void {
  for (const line of bannerLines(facts)) logger.info({ context: 'Boot' }, line);
}
