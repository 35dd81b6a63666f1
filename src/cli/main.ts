import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config/index.js';
import { CliError, usageError } from './cli-error.js';
import { createOutput } from './output.js';

// Each command's module is loaded when it runs: `serve` never pays for the simulator and its tokenizer
// (~60 MB resident) that `demo` needs.

const HELP = `Usage: tollgate <command> [options]   (every command takes --json)

  serve                                         run the gateway
  demo [--latency MS]                           gateway + local upstream simulator + demo account and key
  migrate                                       apply database migrations
  accounts create --email E [--password-stdin] [--admin]
                                                an admin without --password-stdin gets a generated password
  accounts password --email E [--password-stdin]   new dashboard password (generated if not on stdin)
  credits add --email E --amount USD [--note TEXT]
  keys create --email E --name NAME             prints the new key once
  keys list --email E
  keys revoke --email E --id ID
  ledger check                                  exits non-zero when the ledger is inconsistent
  backup <file> [--force]                       consistent copy of the SQLite database, server running or not

Configuration comes from the environment (PORT, HOST, DATABASE_URL, PROV_<NAME>_API_KEY, …);
see docs/configuration.md.`;

const OPTIONS = {
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  email: { type: 'string' },
  'password-stdin': { type: 'boolean' },
  admin: { type: 'boolean' },
  amount: { type: 'string' },
  note: { type: 'string' },
  name: { type: 'string' },
  id: { type: 'string' },
  latency: { type: 'string' },
  force: { type: 'boolean' },
} as const;

/** Which options each command accepts; anything else is a usage error. */
const ALLOWED: Record<string, readonly string[]> = {
  serve: [],
  demo: ['latency'],
  migrate: [],
  'accounts create': ['email', 'password-stdin', 'admin'],
  'accounts password': ['email', 'password-stdin'],
  'credits add': ['email', 'amount', 'note'],
  'keys create': ['email', 'name'],
  'keys list': ['email'],
  'keys revoke': ['email', 'id'],
  'ledger check': [],
  backup: ['force'],
};

async function dispatch(argv: string[]): Promise<number | 'running'> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: OPTIONS,
    allowPositionals: true,
    strict: true,
  });
  const out = createOutput(values.json === true);
  if (values.help || positionals.length === 0) {
    process.stdout.write(`${HELP}\n`);
    return positionals.length === 0 && !values.help ? 2 : 0;
  }
  const command = ['accounts', 'credits', 'keys', 'ledger'].includes(positionals[0] ?? '')
    ? positionals.slice(0, 2).join(' ')
    : (positionals[0] ?? '');
  const allowed = ALLOWED[command];
  if (!allowed) throw usageError(`unknown command "${positionals.join(' ')}"; see tollgate --help`);
  for (const [option, value] of Object.entries(values)) {
    if (value !== undefined && option !== 'json' && option !== 'help' && !allowed.includes(option)) {
      throw usageError(`--${option} is not an option of "${command}"`);
    }
  }
  switch (command) {
    case 'serve':
      await (await import('./commands/serve.js')).serve(loadConfig(), out);
      return 'running';
    case 'demo': {
      const latencyMs = values.latency === undefined ? 0 : Number(values.latency);
      if (!Number.isInteger(latencyMs) || latencyMs < 0)
        throw usageError('--latency must be whole milliseconds');
      await (await import('./commands/demo.js')).demo({ latencyMs }, out);
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
      await (await import('./commands/keys.js')).keysCreate({ email: values.email, name: values.name }, out);
      return 0;
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
    default:
      throw usageError(`unknown command "${command}"`);
  }
}

function report(err: unknown, json: boolean): number {
  let message: string;
  let code = 'error';
  let exitCode = 1;
  if (err instanceof CliError) {
    message = err.message;
    code = err.code;
    exitCode = err.exitCode;
  } else if (err instanceof ConfigError) {
    message = err.message;
    code = 'invalid_configuration';
  } else if (err instanceof Error && (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
    message = `${err.message}; see tollgate --help`;
    code = 'usage';
    exitCode = 2;
  } else {
    message = err instanceof Error ? err.message : String(err);
  }
  process.stderr.write(json ? `${JSON.stringify({ error: { message, code } })}\n` : `tollgate: ${message}\n`);
  return exitCode;
}

/** Entry point of `bin/tollgate`. */
export async function run(argv: string[]): Promise<void> {
  const json = argv.includes('--json');
  try {
    const result = await dispatch(argv);
    if (result !== 'running') process.exitCode = result;
  } catch (err) {
    process.exitCode = report(err, json);
  }
}
