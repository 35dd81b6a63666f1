/**
 * The command line of `bin/tollgate`: its commands, their options, and a parser whose every complaint is
 * in the CLI's own words. Node's `util.parseArgs` was used before; it rejects `--amount -5` as an
 * "ambiguous" argument with advice about `--amount=-XYZ`, where the operator needs to hear that the
 * amount must be positive.
 */

const OPTION_KINDS = {
  json: 'boolean',
  help: 'boolean',
  email: 'string',
  'password-stdin': 'boolean',
  admin: 'boolean',
  amount: 'string',
  note: 'string',
  name: 'string',
  id: 'string',
  latency: 'string',
  database: 'string',
  force: 'boolean',
  stream: 'boolean',
  version: 'boolean',
  count: 'string',
  expires: 'string',
  code: 'string',
  limit: 'string',
  'limit-reset': 'string',
  allow: 'string',
  rpm: 'string',
  tpm: 'string',
} as const;

export type OptionName = keyof typeof OPTION_KINDS;

export type OptionValues = {
  -readonly [K in OptionName]?: (typeof OPTION_KINDS)[K] extends 'boolean' ? boolean : string;
};

export interface Command {
  /** The usage line printed with every usage error of the command. */
  usage: string;
  /** Its options besides --json and --help. */
  options: readonly OptionName[];
}

export const COMMANDS: Readonly<Record<string, Command>> = {
  serve: { usage: 'tollgate serve', options: [] },
  demo: {
    usage: 'tollgate demo [--latency MS] [--database URL] [--stream]',
    options: ['latency', 'database', 'stream'],
  },
  migrate: { usage: 'tollgate migrate', options: [] },
  'accounts create': {
    usage: 'tollgate accounts create --email E [--password-stdin] [--admin]',
    options: ['email', 'password-stdin', 'admin'],
  },
  'accounts password': {
    usage: 'tollgate accounts password --email E [--password-stdin]',
    options: ['email', 'password-stdin'],
  },
  'credits add': {
    usage: 'tollgate credits add --email E --amount USD [--note TEXT]',
    options: ['email', 'amount', 'note'],
  },
  'keys create': {
    usage:
      'tollgate keys create --email E --name NAME [--limit USD] [--limit-reset daily|weekly|monthly|never] [--expires ISO-8601] [--allow LIST] [--rpm N] [--tpm N]',
    options: ['email', 'name', 'limit', 'limit-reset', 'expires', 'allow', 'rpm', 'tpm'],
  },
  'keys update': {
    usage:
      'tollgate keys update --email E --id ID [--name NAME] [--limit USD|none] [--limit-reset daily|weekly|monthly|never] [--expires ISO-8601|none] [--allow LIST|all] [--rpm N|none] [--tpm N|none]',
    options: ['email', 'id', 'name', 'limit', 'limit-reset', 'expires', 'allow', 'rpm', 'tpm'],
  },
  'keys list': { usage: 'tollgate keys list --email E', options: ['email'] },
  'keys revoke': { usage: 'tollgate keys revoke --email E --id ID', options: ['email', 'id'] },
  'ledger check': { usage: 'tollgate ledger check', options: [] },
  backup: { usage: 'tollgate backup <file> [--force]', options: ['force'] },
  version: { usage: 'tollgate version', options: [] },
  'codes create': {
    usage: 'tollgate codes create --amount USD --count N [--expires ISO-8601] [--note TEXT]',
    options: ['amount', 'count', 'expires', 'note'],
  },
  'codes list': { usage: 'tollgate codes list', options: [] },
  'codes redeem': { usage: 'tollgate codes redeem --email E --code C', options: ['email', 'code'] },
};

/** Said with a usage error that belongs to no one command. */
export const GENERAL_USAGE = 'tollgate <command> [options]   (tollgate --help lists the commands)';

/** Commands named by two words. */
const GROUPS = ['accounts', 'credits', 'keys', 'ledger', 'codes'];

/** Whether `word` names a group of commands (`keys` for `keys create`, `keys list`, …). */
export function isGroup(word: string): boolean {
  return GROUPS.includes(word);
}

/** The subcommands of a group (`create`, `list`, `revoke` for `keys`), in the order of `COMMANDS`. */
export function subcommandsOf(group: string): string[] {
  return Object.keys(COMMANDS)
    .filter((name) => name.startsWith(`${group} `))
    .map((name) => name.slice(group.length + 1));
}

/** The usage lines of a group's commands, one per line. */
export function groupUsage(group: string): string {
  return subcommandsOf(group)
    .map((sub) => COMMANDS[`${group} ${sub}`]?.usage)
    .join('\n');
}

/** The command the positionals name (`credits add`, `serve`, …), known or not; '' for none. */
export function commandNameOf(positionals: readonly string[]): string {
  return GROUPS.includes(positionals[0] ?? '') ? positionals.slice(0, 2).join(' ') : (positionals[0] ?? '');
}

export interface ParsedCommandLine {
  values: OptionValues;
  positionals: string[];
  /** The first thing wrong with the command line, if any; the caller reports it with the usage line. */
  problem: string | undefined;
}

function isOptionName(name: string): name is OptionName {
  return Object.hasOwn(OPTION_KINDS, name);
}

/**
 * Splits argv into options and positionals. `--name value` and `--name=value` both work; a string
 * option takes the next argument as its value even when it starts with a dash (`--amount -5` is an amount
 * for the command to refuse, `--note -` a note), unless that argument is itself one of the CLI's long
 * options, which means the value was forgotten. `--` ends the options.
 */
export function parseCommandLine(argv: readonly string[]): ParsedCommandLine {
  const values: OptionValues = {};
  const positionals: string[] = [];
  let problem: string | undefined;
  const complain = (message: string) => {
    problem ??= message;
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (arg === '-h') {
      values.help = true;
      continue;
    }
    if (!arg.startsWith('--')) {
      if (arg.startsWith('-') && arg.length > 1) complain(`unknown option ${arg}`);
      else positionals.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
    if (!isOptionName(name)) {
      complain(`unknown option --${name}`);
      continue;
    }
    if (OPTION_KINDS[name] === 'boolean') {
      if (eq !== -1) complain(`--${name} takes no value`);
      else (values as Record<string, boolean>)[name] = true;
      continue;
    }
    let value: string | undefined;
    if (eq !== -1) value = arg.slice(eq + 1);
    else {
      const next = argv[i + 1];
      const nextIsOption = next?.startsWith('--') && isOptionName(next.slice(2).split('=')[0] ?? '');
      if (next !== undefined && !nextIsOption && next !== '--') {
        value = next;
        i++;
      }
    }
    if (value === undefined) {
      complain(`--${name} needs a value`);
      continue;
    }
    const strings = values as Record<string, string>;
    if (strings[name] !== undefined && strings[name] !== value) complain(`--${name} is given twice`);
    strings[name] = value;
  }
  return { values, positionals, problem };
}
