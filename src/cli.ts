import 'reflect-metadata';
import { userInfo } from 'node:os';
import { DataSource } from 'typeorm';
import { cliProgram, EXIT_USAGE, runCli } from './cli/cli-program';
import { isCommandError, Output, runTokenCommand, TokenCommand } from './cli/operator-token-commands';
import { AuditEntry } from './controller/audit/audit.entity';
import { AuditRepository } from './controller/audit/audit.repository';
import { OperatorToken } from './controller/auth/operator-token.entity';
import { OperatorTokensService } from './controller/auth/operator-tokens.service';
import { AppConfig, ConfigError, loadConfig } from './shared/config/config';
import { withEmbeddedSecrets } from './shared/config/secrets';
import { EmbeddedDatabaseInUseError } from './shared/database/data-dir-lock';
import { roleDataSourceOptions } from './shared/database/data-sources';
import { EmbeddedPostgres, startEmbeddedPostgres } from './shared/database/embedded-postgres';
import { runMigrations } from './shared/database/migrate';
import { SCHEMA_PARTS } from './shared/database/schema-parts';

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
  return runCli(cliProgram(runToken, output), argv);
}

async function runToken(command: TokenCommand): Promise<void> {
  const database = await openDatabase(readConfig());
  try {
    const trail = new AuditRepository(database.source.getRepository(AuditEntry));
    await runTokenCommand(command, new OperatorTokensService(database.source.getRepository(OperatorToken)), output, (action, token) => trail.insertMany([{
      at: new Date().toISOString(), actorKind: 'operator', actorId: 'cli', actorName: `cli:${userInfo().username}`, action: `cli.token${action === 'create' ? 'Create' : 'Revoke'}`,
      resourceType: 'operator_token', resourceId: token.id, outcome: 'succeeded', statusCode: null, remoteAddr: null, details: { name: token.name },
    }]));
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
    if (error instanceof ConfigError) {
      output.err(error.message);
      process.exit(EXIT_USAGE);
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
