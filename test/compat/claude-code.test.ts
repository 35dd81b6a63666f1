import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { exitWithin, linkBin, runIn, startIn } from '../cli/cli-process.js';
import { outputOf } from '../helpers/cli.js';
import { canRun } from '../helpers/system-programs.js';

/**
 * The real Claude Code (npm `@anthropic-ai/claude-code`, whose `claude` is a native binary from a platform
 * package, so it runs whatever the Node version) against `bin/tollgate demo` through the Messages door: its
 * `claude-*` model name goes to prov-claude (`MODEL_ALIASES`' default), the simulator speaking Anthropic's
 * format, which receives Claude Code's body as sent. Installed on demand into a cache folder outside the
 * repository, never as a project dependency: `TOLLGATE_TEST_CLIENTS_DIR`, else
 * `~/.cache/tollgate-test-clients`, in a folder of its own (`claude-code/`) so that installing it does not
 * prune the Codex CLI installed next to it. Outside CI a failed install skips this file with a SKIPPED
 * line; in CI it fails. Needs `npm run build` (the CLI runs from dist/), as the other CLI tests do.
 */
const CACHE = join(
  process.env.TOLLGATE_TEST_CLIENTS_DIR ?? join(homedir(), '.cache', 'tollgate-test-clients'),
  'claude-code',
);
const CLAUDE = join(CACHE, 'node_modules', '.bin', 'claude');

/** Why Claude Code cannot run here, or undefined once it is installed and starts. */
function installClaude(): string | undefined {
  if (!existsSync(CLAUDE)) {
    try {
      mkdirSync(CACHE, { recursive: true });
    } catch (err) {
      return `@anthropic-ai/claude-code could not be installed: ${CACHE} cannot be created (${(err as Error).message})`;
    }
    const npm = spawnSync(
      'npm',
      [
        'install',
        '--prefix',
        CACHE,
        '--no-save',
        '--no-audit',
        '--no-fund',
        '@anthropic-ai/claude-code@latest',
      ],
      { encoding: 'utf8', timeout: 600_000 },
    );
    if (npm.status !== 0 || !existsSync(CLAUDE)) {
      const said = `${npm.stderr ?? ''}`.trim().split('\n').at(-1) ?? '';
      return `@anthropic-ai/claude-code could not be installed into ${CACHE} (npm ${npm.error?.message ?? `exit ${npm.status}`}${said ? `: ${said}` : ''})`;
    }
  }
  const version = spawnSync(CLAUDE, ['--version'], { encoding: 'utf8', timeout: 60_000 });
  if (version.status === 0) return undefined;
  return `claude --version failed in ${CACHE} (${version.error?.message ?? `exit ${version.status}`}: ${`${version.stderr ?? ''}`.trim().slice(-200)})`;
}

const missing = installClaude();
const runnable = canRun('the Claude Code test', missing === undefined ? [] : [missing]);

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** One line of `claude -p --output-format stream-json`. */
interface StreamJsonLine {
  type: string;
  subtype?: string;
  result?: string;
  is_error?: boolean;
  usage?: {
    input_tokens: number;
    output_tokens: number;
    cache_creation_input_tokens: number;
    cache_read_input_tokens: number;
  };
}

interface UsageRow {
  request_id: string;
  key_id: string;
  provider: string;
  prompt_tokens: number;
  completion_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  charged_nano: number;
  status: string;
}

interface SimRecord {
  path: string;
  headers: Record<string, string>;
  body: Record<string, unknown> | null;
  stream: boolean;
}

describe.skipIf(!runnable)('Claude Code (claude -p) through POST /api/v1/messages', () => {
  it('runs a task with a tool round trip, streamed, key as x-api-key and as Bearer, billed exactly', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-claude-'));
    dirs.push(dir);
    const cwd = join(dir, 'demo');
    const work = join(dir, 'work');
    for (const d of [cwd, work]) mkdirSync(d);
    writeFileSync(join(work, 'notes'), 'a note for the Read tool\n');
    linkBin(cwd);
    const demo = await startIn(cwd, ['demo', '--json', '--stream'], { PORT: '0' }, /\{"url".*\}\n/);
    try {
      const { url, key, balance, simulator_url } = JSON.parse(demo.match[0]) as {
        url: string;
        key: string;
        balance: number;
        simulator_url: string;
      };

      /** `claude -p` with the key in `keyVariable`; its stream-json lines once it has exited. */
      async function claude(keyVariable: 'ANTHROPIC_API_KEY' | 'ANTHROPIC_AUTH_TOKEN', home: string) {
        mkdirSync(home);
        const child = spawn(
          CLAUDE,
          [
            '-p',
            // The simulator calls the tool the last user text names, then quotes what it returned.
            'Use the Read tool on the file notes',
            '--tools',
            'Read',
            '--output-format',
            'stream-json',
            '--verbose',
          ],
          {
            cwd: work,
            env: {
              PATH: process.env.PATH ?? '',
              HOME: home,
              ANTHROPIC_BASE_URL: `${url}/api`,
              [keyVariable]: key,
              // Only the calls the task needs: no telemetry, error reports, update checks or other traffic
              // (the network here is loopback only).
              CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
              DISABLE_AUTOUPDATER: '1',
              DISABLE_TELEMETRY: '1',
              DISABLE_ERROR_REPORTING: '1',
            },
            stdio: ['ignore', 'pipe', 'pipe'],
          },
        );
        const done = outputOf(child);
        void exitWithin(child, 150_000);
        const run = await done;
        expect(run.code, `${run.stderr.slice(-2000)}\n${run.stdout.slice(-2000)}`).toBe(0);
        return run.stdout
          .split('\n')
          .filter((line) => line.startsWith('{'))
          .map((line) => JSON.parse(line) as StreamJsonLine);
      }

      const readRows = (): UsageRow[] => {
        const db = new Database(join(cwd, 'data', 'demo.db'), { readonly: true });
        try {
          return db.prepare('SELECT * FROM usage ORDER BY created_at, request_id').all() as UsageRow[];
        } finally {
          db.close();
        }
      };

      const told: NonNullable<StreamJsonLine['usage']>[] = [];
      for (const [i, variable] of (['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN'] as const).entries()) {
        const before = readRows().length;
        const lines = await claude(variable, join(dir, `home-${i}`));
        const result = lines.find((line) => line.type === 'result');
        expect(result?.is_error, JSON.stringify(result)).toBe(false);
        // The tool round trip: the simulator asked for Read, Claude Code ran it and sent back its result.
        expect(result?.result).toMatch(/^Simulated reply from claude: Read returned /);
        const rows = readRows().slice(before);
        expect(rows.length).toBeGreaterThanOrEqual(2);
        for (const row of rows) expect(row).toMatchObject({ provider: 'prov-claude', status: 'ok' });
        // What Claude Code was told (its session's usage totals) is what the usage rows bill.
        const usage = result?.usage;
        if (usage === undefined) throw new Error('no usage in the result line');
        told.push(usage);
        const prompt = usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens;
        expect(rows.reduce((sum, row) => sum + row.prompt_tokens, 0)).toBe(prompt);
        expect(rows.reduce((sum, row) => sum + row.completion_tokens, 0)).toBe(usage.output_tokens);
        expect(rows.reduce((sum, row) => sum + row.cache_read_tokens, 0)).toBe(usage.cache_read_input_tokens);
      }

      // Every call reached the simulator streamed, with Claude Code's betas, thinking and cache_control as
      // it sent them (the door passes a Messages body through to an Anthropic upstream).
      const sim = (await (await fetch(`${simulator_url}/__sim/requests?slug=claude`)).json()) as {
        requests: SimRecord[];
      };
      const completions = sim.requests.filter((request) => request.path.endsWith('/v1/messages'));
      const rows = readRows();
      expect(completions.length).toBe(rows.length);
      for (const request of completions) {
        expect(request.stream).toBe(true);
        // The beta its system turns need (the simulator refuses them without it, as Anthropic does).
        expect(request.headers['anthropic-beta']).toMatch(/(^|,)per-turn-control-\d{4}-\d{2}-\d{2}(,|$)/);
        expect(request.body?.thinking).toBeDefined();
        expect(JSON.stringify(request.body?.system)).toContain('"cache_control"');
      }

      const res = await fetch(`${url}/api/v1/key`, { headers: { authorization: `Bearer ${key}` } });
      const info = (await res.json()) as { balance: number; held: number; spend: { today: number } };
      expect(info.held).toBe(0);
      // Balance fall = the usage rows' charges, to the nanodollar.
      const charged = rows.reduce((sum, row) => sum + row.charged_nano, 0);
      expect(charged).toBeGreaterThan(0);
      expect(Math.round((balance - info.balance) * 1e9)).toBe(charged);
      expect(Math.round(info.spend.today * 1e9)).toBe(charged);
    } finally {
      demo.child.kill('SIGTERM');
      await exitWithin(demo.child, 15_000);
    }
    const check = await runIn(cwd, ['ledger', 'check', '--json'], { DATABASE_URL: 'sqlite:./data/demo.db' });
    expect(check.code, check.stderr).toBe(0);
    expect(JSON.parse(check.stdout)).toMatchObject({ ok: true, problems: [] });
  }, 400_000);
});
