import { cliProgram, runCli } from './cli-program';
import { TokenCommand } from './operator-token-commands';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  commands: TokenCommand[];
}

/** Parses like `npm run cli -- <args>`, recording the token commands it would run. */
async function cli(...args: string[]): Promise<Run> {
  const run: Run = { code: -1, stdout: '', stderr: '', commands: [] };
  const output = { out: (line: string) => (run.stdout += `${line}\n`), err: (line: string) => (run.stderr += `${line}\n`) };
  run.code = await runCli(cliProgram(async (command) => void run.commands.push(command), output), args);
  return run;
}

describe('the CLI parser', () => {
  it.each([[], ['token'], ['token', 'create'], ['token', 'list'], ['token', 'revoke']])('%j --help prints help on stdout and exits 0', async (...path) => {
    const run = await cli(...path, '--help');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Usage: npm run cli --');
    expect(run.commands).toEqual([]);
  });

  it('shows each command its own options and arguments', async () => {
    expect((await cli('token', 'create', '--help')).stdout).toContain('--name <name>');
    expect((await cli('token', 'list', '--help')).stdout).toContain('--json');
    expect((await cli('token', 'revoke', '--help')).stdout).toContain('<id|name>');
    expect((await cli('help', 'token')).code).toBe(0);
  });

  it('reads each command into what it runs', async () => {
    expect((await cli('token', 'create', '--name', 'ci')).commands).toEqual([{ action: 'create', name: 'ci' }]);
    expect((await cli('token', 'create', '--name=ci')).commands).toEqual([{ action: 'create', name: 'ci' }]);
    expect((await cli('token', 'list', '--json')).commands).toEqual([{ action: 'list', json: true }]);
    expect((await cli('token', 'list')).commands).toEqual([{ action: 'list', json: false }]);
    expect((await cli('token', 'revoke', 'ci')).commands).toEqual([{ action: 'revoke', target: 'ci' }]);
  });

  it.each([
    [['deploy'], "unknown command 'deploy'"],
    [['token', 'rotate'], "unknown command 'rotate'"],
    [['token', 'create'], "required option '--name <name>' not specified"],
    [['token', 'revoke'], "missing required argument 'id|name'"],
    [['token', 'list', '--verbose'], "unknown option '--verbose'"],
    [['token', 'revoke', 'a', 'b'], 'too many arguments'],
  ])('%j exits 2 saying what is wrong, with the usage', async (args, message) => {
    const run = await cli(...args);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(message);
    expect(run.stderr).toContain('Usage:');
    expect(run.commands).toEqual([]);
  });

  it('without a command prints the usage with examples on stderr and exits 2', async () => {
    const run = await cli();
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('token create --name <name>');
  });
});
