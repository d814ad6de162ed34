import { Command, CommanderError } from 'commander';
import { Output, TokenCommand } from './operator-token-commands';

/** Exit codes: 0 done (and `--help`), 1 refused (not found, conflict, invalid), 2 usage or configuration, 3 database. */
export const EXIT_USAGE = 2;

const EXAMPLES = [
  '',
  'Examples:',
  '  npm run cli -- token create --name <name>   make an operator token (printed once)',
  '  npm run cli -- token list [--json]          list operator tokens (never the tokens)',
  '  npm run cli -- token revoke <id|name>       revoke an operator token',
].join('\n');

/**
 * The administration commands as a commander program. Parsing is kept apart from running
 * (`runToken` opens the database), so `--help` and usage errors never touch it.
 */
export function cliProgram(runToken: (command: TokenCommand) => Promise<void>, output: Output): Command {
  const program = new Command('npm run cli --')
    .description('Administration commands for the task controller; they need only its configuration and database.')
    .exitOverride()
    .configureOutput({ writeOut: (text) => output.out(text.trimEnd()), writeErr: (text) => output.err(text.trimEnd()) })
    .showHelpAfterError()
    .addHelpText('after', EXAMPLES);
  const token = program
    .command('token')
    .description('operator tokens for `Authorization: Token <token>` (API_TOKEN always works besides)')
    .addHelpText('after', EXAMPLES);
  token
    .command('create')
    .description('make an operator token; it is printed once, on stdout')
    .requiredOption('--name <name>', 'a name unique among live tokens')
    .action((options: { name: string }) => runToken({ action: 'create', name: options.name }));
  token
    .command('list')
    .description('list operator tokens (never the tokens themselves)')
    .option('--json', 'JSON instead of a table')
    .action((options: { json?: boolean }) => runToken({ action: 'list', json: options.json === true }));
  token
    .command('revoke')
    .description('revoke an operator token; it is refused at once')
    .argument('<id|name>', 'the id or the name of the token')
    .action((target: string) => runToken({ action: 'revoke', target }));
  return program;
}

/** Runs the program on the arguments; commander's own outcomes (help, usage errors) become exit codes. */
export async function runCli(program: Command, argv: string[]): Promise<number> {
  try {
    await program.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : EXIT_USAGE;
    throw error;
  }
}
