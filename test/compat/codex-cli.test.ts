import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { exitWithin, linkBin, runIn, startIn } from '../cli/cli-process.js';
import { outputOf } from '../helpers/cli.js';
import { canRun } from '../helpers/system-programs.js';

/**
 * The real Codex CLI (npm `@openai/codex`, which ships a native binary in a platform package) against
 * `bin/tollgate demo` through the Responses door. Codex is installed on demand into a cache folder
 * outside the repository, never as a project dependency: `TOLLGATE_TEST_CLIENTS_DIR`, else
 * `~/.cache/tollgate-test-clients`. Outside CI a failed install skips this file with a SKIPPED line; in
 * CI it fails. Needs `npm run build` (the CLI runs from dist/), as the other CLI tests do.
 */
const CACHE = process.env.TOLLGATE_TEST_CLIENTS_DIR ?? join(homedir(), '.cache', 'tollgate-test-clients');
const CODEX = join(CACHE, 'node_modules', '.bin', 'codex');

/** Why Codex cannot run here, or undefined once it is installed. */
function installCodex(): string | undefined {
  if (existsSync(CODEX)) return undefined;
  try {
    mkdirSync(CACHE, { recursive: true });
  } catch (err) {
    return `@openai/codex could not be installed: ${CACHE} cannot be created (${(err as Error).message})`;
  }
  const npm = spawnSync(
    'npm',
    ['install', '--prefix', CACHE, '--no-save', '--no-audit', '--no-fund', '@openai/codex@latest'],
    { encoding: 'utf8', timeout: 300_000 },
  );
  if (npm.status === 0 && existsSync(CODEX)) return undefined;
  const said = `${npm.stderr ?? ''}`.trim().split('\n').at(-1) ?? '';
  return `@openai/codex could not be installed into ${CACHE} (npm ${npm.error?.message ?? `exit ${npm.status}`}${said ? `: ${said}` : ''})`;
}

const missing = installCodex();
const runnable = canRun('the Codex CLI test', missing === undefined ? [] : [missing]);

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!runnable)('Codex CLI (codex exec) through POST /api/v1/responses', () => {
  it('runs a task with one function-call round trip, billed exactly, ledger check clean', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-codex-'));
    dirs.push(dir);
    const cwd = join(dir, 'demo');
    const work = join(dir, 'work');
    const codexHome = join(dir, 'codex-home');
    for (const d of [cwd, work, codexHome]) mkdirSync(d);
    linkBin(cwd);
    const demo = await startIn(cwd, ['demo', '--json', '--stream'], { PORT: '0' }, /\{"url".*\}\n/);
    try {
      const { url, key, balance } = JSON.parse(demo.match[0]) as {
        url: string;
        key: string;
        balance: number;
      };
      writeFileSync(
        join(codexHome, 'config.toml'),
        [
          'model = "prov-qwen"',
          'model_provider = "tollgate"',
          '',
          '[model_providers.tollgate]',
          'name = "Tollgate"',
          `base_url = "${url}/api/v1"`,
          'env_key = "TOLLGATE_API_KEY"',
          'wire_api = "responses"',
          '',
        ].join('\n'),
      );
      const codex = spawn(
        CODEX,
        ['exec', '--skip-git-repo-check', '--sandbox', 'read-only', 'Use the shell tool once, then say done'],
        {
          cwd: work,
          env: { PATH: process.env.PATH ?? '', HOME: dir, CODEX_HOME: codexHome, TOLLGATE_API_KEY: key },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      const done = outputOf(codex);
      void exitWithin(codex, 150_000);
      const run = await done;
      expect(run.code, run.stderr.slice(-2000)).toBe(0);
      // The simulator calls the first tool offered (Codex's shell), then quotes the tool's result.
      expect(run.stdout).toMatch(/Simulated reply from qwen: \w+ returned/);

      const res = await fetch(`${url}/api/v1/key`, { headers: { authorization: `Bearer ${key}` } });
      const info = (await res.json()) as { balance: number; held: number; spend: { today: number } };
      expect(info.held).toBe(0);
      // Balance fall = the usage rows' spend: two calls (the function call, then the answer) were billed.
      expect(Math.round((balance - info.balance) * 1e9)).toBe(Math.round(info.spend.today * 1e9));
      expect(info.spend.today).toBeGreaterThan(0);

      const check = await runIn(cwd, ['ledger', 'check', '--json'], {
        DATABASE_URL: 'sqlite:./data/demo.db',
      });
      expect(check.code, check.stderr).toBe(0);
      expect(JSON.parse(check.stdout)).toMatchObject({ ok: true, problems: [] });
    } finally {
      demo.child.kill('SIGTERM');
      await exitWithin(demo.child, 15_000);
    }
  }, 240_000);
});
