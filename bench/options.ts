/**
 * Command-line flags of the benchmark scripts, each with a `BENCH_<FLAG>` environment fallback
 * (`--runs 5` or `BENCH_RUNS=5`), so `npm run bench -- --quick` and `BENCH_QUICK=1 npm run bench` both work.
 */
import { parseArgs } from 'node:util';

export type FlagSpec = Record<string, { type: 'string' | 'boolean'; help: string }>;

export interface Flags {
  string(name: string): string | undefined;
  number(name: string, fallback: number): number;
  boolean(name: string): boolean;
  list(name: string): string[] | undefined;
  /** `list(name)` (or `fallback`), each item one of `allowed`'s keys; exits with a usage error otherwise. */
  choices<K extends string>(name: string, allowed: Readonly<Record<K, unknown>>, fallback: K[]): K[];
  /**
   * `A=1,B=2` → `{ A: '1', B: '2' }`, split only at a comma followed by the next `NAME=` (`H=a,b,M=0` →
   * `{ H: 'a,b', M: '0' }`); exits with a usage error when the first pair has no `=`.
   */
  env(name: string): Record<string, string>;
}

function envName(flag: string): string {
  return `BENCH_${flag.toUpperCase().replace(/-/g, '_')}`;
}

export function usage(script: string, spec: FlagSpec): string {
  const lines = [`usage: ${script} [options]`, ''];
  for (const [name, { type, help }] of Object.entries(spec)) {
    const flag = `  --${name}${type === 'string' ? ' <value>' : ''}`;
    lines.push(`${flag.padEnd(28)}${help} (env ${envName(name)})`);
  }
  return lines.join('\n');
}

/** Parses argv against `spec`; prints usage and exits on `--help` or an unknown flag. */
export function readFlags(script: string, spec: FlagSpec, argv = process.argv.slice(2)): Flags {
  const options: Record<string, { type: 'string' | 'boolean' }> = { help: { type: 'boolean' } };
  for (const [name, { type }] of Object.entries(spec)) options[name] = { type };
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({ args: argv, options, strict: true, allowPositionals: false }).values as Record<
      string,
      string | boolean | undefined
    >;
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n\n${usage(script, spec)}\n`);
    process.exit(2);
  }
  if (values.help) {
    process.stdout.write(`${usage(script, spec)}\n`);
    process.exit(0);
  }
  const raw = (name: string): string | boolean | undefined => values[name] ?? process.env[envName(name)];
  const flags: Flags = {
    string: (name) => {
      const v = raw(name);
      return typeof v === 'string' && v.length > 0 ? v : undefined;
    },
    number: (name, fallback) => {
      const v = raw(name);
      if (v === undefined || v === '') return fallback;
      const n = Number(v);
      if (!Number.isFinite(n) || n < 0) {
        process.stderr.write(`--${name} must be a non-negative number (got ${String(v)})\n`);
        process.exit(2);
      }
      return n;
    },
    boolean: (name) => {
      const v = raw(name);
      return v === true || v === '1' || v === 'true';
    },
    list: (name) => {
      const v = raw(name);
      if (typeof v !== 'string' || v.trim() === '') return undefined;
      return v
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s.length > 0);
    },
    choices<K extends string>(name: string, allowed: Readonly<Record<K, unknown>>, fallback: K[]): K[] {
      const items = flags.list(name) ?? fallback;
      for (const item of items) {
        if (!Object.hasOwn(allowed, item)) {
          process.stderr.write(`--${name}: ${item} is not one of ${Object.keys(allowed).join(', ')}\n`);
          process.exit(2);
        }
      }
      return items as K[];
    },
    env(name) {
      const env: Record<string, string> = {};
      const v = raw(name);
      if (typeof v !== 'string' || v.trim() === '') return env;
      // Pairs are split at a comma that starts the next NAME=, so a value may hold commas itself
      // (ALLOWED_CUSTOM_HOSTS=a,b,METRICS_ENABLED=false is two variables).
      for (const pair of v.split(/,(?=\s*[A-Za-z_][A-Za-z0-9_]*=)/).map((p) => p.trim())) {
        const eq = pair.indexOf('=');
        if (eq <= 0) {
          process.stderr.write(`--${name}: ${pair} is not NAME=value\n`);
          process.exit(2);
        }
        env[pair.slice(0, eq)] = pair.slice(eq + 1);
      }
      return env;
    },
  };
  return flags;
}
