// First: when the OTEL_* variables ask for traces, the SDK patches http, express, pg, ioredis
// and fetch before anything else loads them.
import './shared/tracing/register';
import 'reflect-metadata';
import { logBanner } from './boot-banner';
import { migrateOnly, startSystem } from './bootstrap';
import { ConfigError, loadConfig } from './shared/config/config';
import { withEmbeddedSecrets } from './shared/config/secrets';
import { createRootLogger } from './shared/logging/logger';
import { logFormatFor } from './shared/logging/pretty-output';
import { stopTracing } from './shared/tracing/sdk';

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  let secrets;
  let config;
  try {
    secrets = withEmbeddedSecrets(process.env, argv);
    config = loadConfig(secrets.env, argv);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    const problems = error.problems;
    process.stderr.write(
      problems.length === 1 ? `Invalid configuration: ${problems[0]}\n` : `${error.message}\n`,
    );
    process.exit(2);
  }
  const logger = createRootLogger(config.logLevel, logFormatFor(config.logFormat));
  if (secrets.generated.length > 0) {
    logger.warn(
      { file: secrets.file, generated: secrets.generated },
      `Generated ${secrets.generated.join(', ')}; the values are kept in ${secrets.file}`,
    );
  }
  if (argv.includes('--migrate-only')) {
    const applied = await migrateOnly(config);
    logger.info({ applied }, applied.length > 0 ? `Applied ${applied.length} migrations` : 'No pending migrations');
    return;
  }
  const system = await startSystem(config);
  logBanner(logger, { config, secretsFile: secrets.file, apiTokenInFile: !process.env.API_TOKEN?.trim() && Boolean(secrets.env.API_TOKEN) });
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'Shutting down');
    system.close().then(stopTracing).then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'Shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((error: unknown) => {
  process.stderr.write(`Boot failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
