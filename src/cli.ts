import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { isCommandError, Output, parseTokenCommand, runTokenCommand, TOKEN_USAGE, UsageError } from './cli/operator-token-commands';
import { OperatorToken } from './controller/auth/operator-token.entity';
import { OperatorTokensService } from './controller/auth/operator-tokens.service';
import { AppConfig, ConfigError, loadConfig } from './shared/config/config';
import { withEmbeddedSecrets } from './shared/config/secrets';
import { EmbeddedDatabaseInUseError } from './shared/database/data-dir-lock';
import { roleDataSourceOptions } from './shared/database/data-sources';
import { EmbeddedPostgres, startEmbeddedPostgres } from './shared/database/embedded-postgres';
import { runMigrations } from './shared/database/migrate';
import { SCHEMA_PARTS } from './shared/database/schema-parts';

/** Exit codes: 0 done, 1 refused (not found, conflict, invalid), 2 usage or configuration, 3 database. */
const output: Output = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
};

/**
 * Administration commands. They need only the configuration and the controller's
 * database: with DATABASE_URL that server, else the embedded database under DATA_DIR,
 * which only one process can open (so the server must be stopped meanwhile).
 */
async function main(argv: string[]): Promise<number> {
  const [group, ...args] = argv;
  if (group !== 'token') {
    output.err(group && group !== '--help' && group !== 'help' ? `Unknown command "${group}".\n${TOKEN_USAGE}` : TOKEN_USAGE);
    return 2;
  }
  const command = parseTokenCommand(args);
  const config = readConfig();
  const database = await openDatabase(config);
  try {
    await runTokenCommand(command, new OperatorTokensService(database.source.getRepository(OperatorToken)), output);
    return 0;
  } finally {
    await database.close();
  }
}

function readConfig(): AppConfig {
  const argv = ['--role', 'controller'];
  return loadConfig(withEmbeddedSecrets(process.env, argv).env, argv);
}

async function openDatabase(config: AppConfig): Promise<{ source: DataSource; close(): Promise<void> }> {
  let embedded: EmbeddedPostgres | undefined;
  let url = config.databaseUrl;
  if (!url) {
    embedded = await startEmbeddedPostgres(config.dataDir);
    url = embedded.url;
  }
  try {
    const options = roleDataSourceOptions('controller', { url, poolSize: 1, migrationsRun: true }, SCHEMA_PARTS.controller);
    await runMigrations(options);
    const source = await new DataSource({ ...options, migrations: [] }).initialize();
    return {
      source,
      async close() {
        await source.destroy();
        await embedded?.stop();
      },
    };
  } catch (error) {
    await embedded?.stop();
    throw error;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof UsageError) {
      output.err(`${error.message}.\n${TOKEN_USAGE}`);
      process.exit(2);
    }
    if (error instanceof ConfigError) {
      output.err(error.message);
      process.exit(2);
    }
    if (isCommandError(error)) {
      output.err(error.message);
      process.exit(1);
    }
    if (error instanceof EmbeddedDatabaseInUseError) {
      output.err(error.message);
      process.exit(3);
    }
    output.err(`Failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(3);
  },
);
