import { ConfigError, readConfig } from '../config/index.js';
import {
  COMMANDS,
  commandNameOf,
  GENERAL_USAGE,
  groupUsage,
  isGroup,
  type OptionValues,
  parseCommandLine,
  subcommandsOf,
} from './args.js';
import { CliError, usageError } from './cli-error.js';
import { createOutput, type Output } from './output.js';

// Each command's module is loaded when it runs: `serve` never pays for the simulator and its tokenizer
// (tens of MB resident) that `demo` needs.

const HELP = `Usage: tollgate <command> [options]   (every command takes --json)

  serve                                         run the gateway
  demo [--latency MS] [--database URL] [--stream]
                                                gateway + local upstream simulator + demo account and key,
                                                on ./data/demo.db (DATABASE_URL is not used); --stream
                                                turns STREAMING on, the simulator streaming 20 pieces/s
  migrate                                       apply database migrations (creating the SQLite database)
  accounts create --email E [--password-stdin] [--admin]
                                                an admin without --password-stdin gets a generated password
  accounts password --email E [--password-stdin]   new dashboard password (generated if not on stdin)
  credits add --email E --amount USD [--note TEXT]
  keys create --email E --name NAME [--limit USD] [--limit-reset daily|weekly|monthly|never]
              [--expires ISO-8601] [--allow LIST] [--rpm N] [--tpm N]
                                                prints the new key once
  keys update --email E --id ID [--name N] [--limit USD|none] [--limit-reset …] [--expires ISO|none]
              [--allow LIST|all] [--rpm N|none] [--tpm N|none]
  keys list --email E                           each key with its limit, spend in the window, expiry
  keys revoke --email E --id ID
  ledger check                                  exits non-zero when the ledger is inconsistent
  backup <file> [--force]                       consistent copy of the SQLite database, server running or not
  version (or --version)                        the version of Tollgate
  codes create --amount USD --count N [--expires ISO-8601] [--note TEXT]
                                                a batch of top-up codes, printed once
  codes list                                    batches with their redeemed and expired counts
  codes redeem --email E --code C               credits a top-up code to an account

Configuration comes from the environment (PORT, HOST, DATABASE_URL, PROV_<NAME>_API_KEY, …);
see docs/configuration.md.`;

/** The commands that run a server: a failed start ends the process (see `run`). */
const SERVERS = new Set(['serve', 'demo']);

/** How long a server command that failed to start may take to close what it opened before it exits. */
const FAILED_START_EXIT_MS = 1_000;

async function dispatch(
  command: string,
  values: OptionValues,
  positionals: string[],
): Promise<number | 'running'> {
  const out = createOutput(values.json === true);
  switch (command) {
    case 'serve':
      await (await import('./commands/serve.js')).serve(readConfig(), out);
      return 'running';
    case 'demo': {
      const latencyMs = values.latency === undefined ? 0 : Number(values.latency);
      if (!/^\d+$/.test(values.latency ?? '0') || !Number.isSafeInteger(latencyMs))
        throw usageError(`--latency: "${values.latency}" must be whole milliseconds, such as 200`);
      await (await import('./commands/demo.js')).demo(
        { latencyMs, database: values.database, stream: values.stream === true },
        out,
      );
      return 'running';
    }
    case 'migrate':
      await (await import('./commands/migrate.js')).migrate(out);
      return 0;
    case 'accounts create':
      await (await import('./commands/accounts.js')).accountsCreate(
        {
          email: values.email,
          passwordStdin: values['password-stdin'] === true,
          admin: values.admin === true,
        },
        out,
      );
      return 0;
    case 'accounts password':
      await (await import('./commands/accounts.js')).accountsPassword(
        { email: values.email, passwordStdin: values['password-stdin'] === true },
        out,
      );
      return 0;
    case 'credits add':
      await (await import('./commands/credits.js')).creditsAdd(
        { email: values.email, amount: values.amount, note: values.note },
        out,
      );
      return 0;
    case 'keys create':
    case 'keys update': {
      const controls = {
        name: values.name,
        limit: values.limit,
        limitReset: values['limit-reset'],
        expires: values.expires,
        allow: values.allow,
        rpm: values.rpm,
        tpm: values.tpm,
      };
      const keys = await import('./commands/keys.js');
      if (command === 'keys create') await keys.keysCreate({ email: values.email, ...controls }, out);
      else await keys.keysUpdate({ email: values.email, id: values.id, ...controls }, out);
      return 0;
    }
    case 'keys list':
      await (await import('./commands/keys.js')).keysList({ email: values.email }, out);
      return 0;
    case 'keys revoke':
      await (await import('./commands/keys.js')).keysRevoke({ email: values.email, id: values.id }, out);
      return 0;
    case 'ledger check':
      return (await import('./commands/ledger.js')).ledgerCheck(out);
    case 'backup':
      await (await import('./commands/backup.js')).backup(
        { files: positionals.slice(1), force: values.force === true },
        out,
      );
      return 0;
    case 'version':
      await printVersion(out);
      return 0;
    case 'codes create':
    case 'codes list':
    case 'codes redeem':
      await (await import('./commands/codes.js')).codes(command, values, out);
      return 0;
    default:
      throw usageError(`unknown command "${command}"`);
  }
}

/** `tollgate version` and `tollgate --version`: the package's version. */
async function printVersion(out: Output): Promise<void> {
  const { VERSION } = await import('../version.js');
  out.result({ version: VERSION }, `tollgate ${VERSION}`);
}

/** "a, b or c". */
function orList(words: readonly string[]): string {
  return words.length <= 1 ? words.join('') : `${words.slice(0, -1).join(', ')} or ${words.at(-1)}`;
}

/** Checks the command line against the command's options; returns the command to run. */
function validate(values: OptionValues, positionals: string[], problem: string | undefined): string {
  const command = commandNameOf(positionals);
  const spec = COMMANDS[command];
  const group = positionals[0] ?? '';
  if (!spec && isGroup(group)) {
    // `tollgate ledger` alone, or a subcommand of a group that does not exist: the group's commands.
    const subs = orList(subcommandsOf(group));
    throw usageError(
      positionals.length === 1
        ? `"${group}" needs a subcommand: ${subs}`
        : `unknown command "${command}" ("${group}" takes ${subs})`,
      groupUsage(group),
    );
  }
  if (!spec) {
    throw usageError(
      command === '' ? (problem ?? 'no command given') : `unknown command "${positionals.join(' ')}"`,
    );
  }
  if (problem) throw usageError(problem);
  for (const [option, value] of Object.entries(values)) {
    if (value === undefined || option === 'json' || option === 'help' || option === 'version') continue;
    if (!(spec.options as readonly string[]).includes(option))
      throw usageError(`--${option} is not an option of "${command}"`);
  }
  return command;
}

/** Writes the error to stderr (one JSON object with --json) and returns the exit code. */
function report(err: unknown, json: boolean, command: string | undefined): number {
  let message: string;
  let code = 'error';
  let exitCode = 1;
  let ownUsage: string | undefined;
  if (err instanceof CliError) {
    message = err.message;
    code = err.code;
    exitCode = err.exitCode;
    ownUsage = err.usage;
  } else if (err instanceof ConfigError) {
    message = err.message;
    code = 'invalid_configuration';
  } else if (err instanceof Error && err.name === 'DatabaseInUseError') {
    // Told by name: importing the class would load the SQLite module for --help and usage errors too.
    message = err.message;
    code = 'database_in_use';
  } else {
    message = err instanceof Error ? err.message : String(err);
  }
  const usage = code === 'usage' ? (ownUsage ?? COMMANDS[command ?? '']?.usage ?? GENERAL_USAGE) : undefined;
  process.stderr.write(
    json
      ? `${JSON.stringify({ error: { message, code, ...(usage ? { usage } : {}) } })}\n`
      : `tollgate: ${message}\n${usage ? `usage: ${usage.replaceAll('\n', '\n       ')}\n` : ''}`,
  );
  return exitCode;
}

/** Entry point of `bin/tollgate`. */
export async function run(argv: string[]): Promise<void> {
  const { values, positionals, problem } = parseCommandLine(argv);
  // Errors are JSON whenever --json was asked for, even when the line around it could not be parsed.
  const json = values.json === true || argv.includes('--json');
  if (values.version && !values.help && problem === undefined) {
    await printVersion(createOutput(json));
    process.exitCode = 0;
    return;
  }
  if (values.help || (positionals.length === 0 && problem === undefined)) {
    process.stdout.write(`${HELP}\n`);
    process.exitCode = values.help ? 0 : 2;
    return;
  }
  const named = commandNameOf(positionals);
  try {
    const command = validate(values, positionals, problem);
    const result = await dispatch(command, values, positionals);
    if (result !== 'running') process.exitCode = result;
  } catch (err) {
    const exitCode = report(err, json, COMMANDS[named] ? named : undefined);
    process.exitCode = exitCode;
    // A server that failed to start closes what it opened; should anything still hold the event loop
    // (a store opened before the failure), the process ends anyway instead of lingering without serving.
    if (SERVERS.has(named)) setTimeout(() => process.exit(exitCode), FAILED_START_EXIT_MS).unref();
  }
}
