import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { runIn } from './cli-process.js';

const KEYS_CREATE =
  'tollgate keys create --email E --name NAME [--limit USD] [--limit-reset daily|weekly|monthly|never] [--expires ISO-8601] [--allow LIST] [--rpm N] [--tpm N]';
const KEYS_UPDATE =
  'tollgate keys update --email E --id ID [--name NAME] [--limit USD|none] [--limit-reset daily|weekly|monthly|never] [--expires ISO-8601|none] [--allow LIST|all] [--rpm N|none] [--tpm N|none]';

// Every mistake on the command line is answered in the CLI's own words, with the command's usage line;
// and commands that only read or change existing rows never create a database.

let dir: string;
let env: Record<string, string>;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-cli-errors-'));
  env = { DATABASE_URL: `sqlite:${join(dir, 'cli.db')}`, LOG_LEVEL: 'silent' };
  const made = await runCli(['accounts', 'create', '--email', 'ops@example.test', '--json'], env);
  expect(made.code).toBe(0);
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

const CREDITS_USAGE = 'usage: tollgate credits add --email E --amount USD [--note TEXT]\n';

describe('bin/tollgate usage errors', () => {
  it('credits add --amount -5 says what is wrong with the amount, with the usage line', async () => {
    const r = await runCli(['credits', 'add', '--email', 'ops@example.test', '--amount', '-5'], env);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      `tollgate: --amount: "-5" must be a positive dollar amount with at most 9 decimal places\n${CREDITS_USAGE}`,
    );
  });

  it('with --json the error is one JSON object on stderr, stdout empty', async () => {
    const r = await runCli(
      ['credits', 'add', '--email', 'ops@example.test', '--amount', '-5', '--json'],
      env,
    );
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(JSON.parse(r.stderr)).toEqual({
      error: {
        message: '--amount: "-5" must be a positive dollar amount with at most 9 decimal places',
        code: 'usage',
        usage: 'tollgate credits add --email E --amount USD [--note TEXT]',
      },
    });
  });

  it.each([
    [['credits', 'add', '--email', 'ops@example.test', '--amount'], '--amount needs a value', CREDITS_USAGE],
    [['credits', 'add', '--amount', '--email', 'ops@example.test'], '--amount needs a value', CREDITS_USAGE],
    [['credits', 'add', '--bogus', 'x'], 'unknown option --bogus', CREDITS_USAGE],
    [['credits', 'add', '-x'], 'unknown option -x', CREDITS_USAGE],
    [['credits', 'add', '--json=yes'], '--json takes no value', CREDITS_USAGE],
    [['credits', 'add', '--amount', '1', '--amount', '2'], '--amount is given twice', CREDITS_USAGE],
    [
      ['keys', 'list', '--amount', '1'],
      '--amount is not an option of "keys list"',
      'usage: tollgate keys list --email E\n',
    ],
    [
      ['demo', '--latency', 'soon'],
      '--latency: "soon" must be whole milliseconds, such as 200',
      'usage: tollgate demo [--latency MS] [--database URL] [--stream]\n',
    ],
    [
      ['frobnicate'],
      'unknown command "frobnicate"',
      'usage: tollgate <command> [options]   (tollgate --help lists the commands)\n',
    ],
    [
      ['credits', 'add', '--email', 'ops@example.test', '--amount', '1000000001'],
      '--amount: "1000000001" is over the maximum, $1000000000',
      CREDITS_USAGE,
    ],
    [
      ['credits', 'add', '--email', 'ops@example.test', '--amount', '99999999999999.25'],
      '--amount: "99999999999999.25" is over the maximum, $1000000000',
      CREDITS_USAGE,
    ],
    [['ledger'], '"ledger" needs a subcommand: check', 'usage: tollgate ledger check\n'],
    [
      ['ledger', 'chekc'],
      'unknown command "ledger chekc" ("ledger" takes check)',
      'usage: tollgate ledger check\n',
    ],
    [
      ['keys'],
      '"keys" needs a subcommand: create, update, list or revoke',
      `usage: ${KEYS_CREATE}\n` +
        `       ${KEYS_UPDATE}\n` +
        '       tollgate keys list --email E\n' +
        '       tollgate keys revoke --email E --id ID\n',
    ],
  ])('%j', async (args, message, usage) => {
    const r = await runCli(args, env);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`tollgate: ${message}\n${usage}`);
  });
});

describe('a missing required option is a usage error before anything touches the database', () => {
  it.each([
    [['keys', 'list'], '--email is required', 'tollgate keys list --email E'],
    [['keys', 'create', '--name', 'k'], '--email is required', KEYS_CREATE],
    [['keys', 'revoke', '--id', 'key_x'], '--email is required', 'tollgate keys revoke --email E --id ID'],
    [
      ['keys', 'list', '--email', 'not-an-email'],
      '--email: "not-an-email" is not an email address',
      'tollgate keys list --email E',
    ],
    [
      ['credits', 'add', '--amount', '1'],
      '--email is required',
      'tollgate credits add --email E --amount USD [--note TEXT]',
    ],
  ])('%j with no database anywhere', async (args, message, usage) => {
    mkdirSync(join(dir, 'nowhere'), { recursive: true });
    const cwd = realpathSync(join(dir, 'nowhere'));
    const r = await runIn(cwd, [...args, '--json'], { LOG_LEVEL: 'silent' });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(JSON.parse(r.stderr)).toEqual({ error: { message, code: 'usage', usage } });
    expect(existsSync(join(cwd, 'data'))).toBe(false);
  });
});

describe('bin/tollgate --version and version', () => {
  const version = (
    JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'package.json'), 'utf8')) as {
      version: string;
    }
  ).version;

  it.each([[['--version']], [['version']]])('%j prints the package version', async (args) => {
    const r = await runCli(args, {});
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`tollgate ${version}\n`);
    expect(r.stderr).toBe('');
  });

  it.each([[['--version', '--json']], [['version', '--json']]])('%j prints one JSON object', async (args) => {
    const r = await runCli(args, {});
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ version });
  });

  it('version takes no options of other commands', async () => {
    const r = await runCli(['version', '--email', 'x@y.z'], {});
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('tollgate: --email is not an option of "version"\nusage: tollgate version\n');
  });
});

describe('commands other than serve, demo, migrate and accounts create never create a database', () => {
  it.each([
    [['accounts', 'password', '--email', 'demo@tollgate.local']],
    [['credits', 'add', '--email', 'ops@example.test', '--amount', '1']],
    [['keys', 'create', '--email', 'ops@example.test', '--name', 'k']],
    [['keys', 'list', '--email', 'ops@example.test']],
    [['keys', 'revoke', '--email', 'ops@example.test', '--id', 'key_x']],
    [['ledger', 'check']],
  ])('%j on a missing file: a clear error, and no file', async (args) => {
    const file = join(dir, 'missing', 'tollgate.db');
    const r = await runCli([...args, '--json'], { DATABASE_URL: `sqlite:${file}`, LOG_LEVEL: 'silent' });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    const error = JSON.parse(r.stderr) as { error: { code: string; message: string } };
    expect(error.error.code).toBe('no_database');
    expect(error.error.message).toContain(`no database at ${file}`);
    expect(error.error.message).toContain('tollgate migrate');
    expect(existsSync(file)).toBe(false);
    expect(existsSync(join(dir, 'missing'))).toBe(false);
  });

  it('without DATABASE_URL the message names the default it looked at', async () => {
    mkdirSync(join(dir, 'no-env'));
    // The real path: the CLI resolves ./data against its working directory as the OS names it.
    const cwd = realpathSync(join(dir, 'no-env'));
    const r = await runIn(cwd, ['ledger', 'check'], { LOG_LEVEL: 'silent' });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `tollgate: no database at ${join(cwd, 'data', 'tollgate.db')} (DATABASE_URL is not set: the default, ` +
        'sqlite:./data/tollgate.db). Set DATABASE_URL to the database the server uses, or create a new one ' +
        'with `tollgate migrate`.\n',
    );
    expect(existsSync(join(cwd, 'data'))).toBe(false);
  });

  it('migrate and accounts create create a new database, and say so', async () => {
    const file = join(dir, 'fresh', 'tollgate.db');
    const r = await runCli(['accounts', 'create', '--email', 'first@example.test'], {
      DATABASE_URL: `sqlite:${file}`,
      LOG_LEVEL: 'silent',
    });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Created a new database at ${file} (DATABASE_URL=sqlite:${file}).`);
    expect(existsSync(file)).toBe(true);
  });
});
