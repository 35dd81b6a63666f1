import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readConfig } from '../../src/config/index.js';

// The systemd unit and the environment file of deploy/: every line of the example is a setting the server
// reads, with a valid value, and the unit is one systemd accepts.

const ROOT = join(import.meta.dirname, '..', '..');
const UNIT = readFileSync(join(ROOT, 'deploy', 'tollgate.service'), 'utf8');
const ENV_EXAMPLE = readFileSync(join(ROOT, 'deploy', 'tollgate.env.example'), 'utf8');

const dir = mkdtempSync(join(tmpdir(), 'tollgate-deploy-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The NAME=value lines of the example, those left commented out as alternatives included. */
function settingsOf(text: string): [string, string][] {
  return text
    .split('\n')
    .map((line) => /^#?([A-Z][A-Z0-9_]*)=(.*)$/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => [m[1] as string, m[2] as string]);
}

function hasSystemdAnalyze(): boolean {
  return spawnSync('systemd-analyze', ['--version']).status === 0;
}

describe('deploy/tollgate.env.example', () => {
  const settings = settingsOf(ENV_EXAMPLE);

  it('names the essentials', () => {
    const names = settings.map(([name]) => name);
    for (const name of ['DATABASE_URL', 'REDIS_URL', 'PORT', 'HOST', 'STREAMING', 'PROV_DEEPSEEK_API_KEY'])
      expect(names).toContain(name);
  });

  it.each(settingsOf(ENV_EXAMPLE))(
    '%s=%s is a setting the server reads, with a valid value',
    (name, value) => {
      // Through the config file, whose every key is checked (the environment's only for PROV_ names).
      const file = join(dir, `${name}.json`);
      writeFileSync(file, JSON.stringify({ [name]: value }));
      const { warnings } = readConfig({ TOLLGATE_CONFIG: file });
      expect(warnings).toEqual([]);
    },
  );
});

describe('deploy/tollgate.service', () => {
  it('runs `bin/tollgate serve` itself, with the environment file, and stops it with SIGTERM', () => {
    expect(UNIT).toMatch(/^ExecStart=\/opt\/tollgate\/bin\/tollgate serve$/m);
    expect(UNIT).toMatch(/^EnvironmentFile=\/etc\/tollgate\/tollgate\.env$/m);
    expect(UNIT).toMatch(/^KillSignal=SIGTERM$/m);
    expect(UNIT).toMatch(/^StateDirectory=tollgate$/m);
    expect(ENV_EXAMPLE).toMatch(/^DATABASE_URL=sqlite:\/var\/lib\/tollgate\/tollgate\.db$/m);
  });

  it.skipIf(!hasSystemdAnalyze())(
    'systemd-analyze verify accepts it (paths pointed at this checkout)',
    () => {
      const unit = join(dir, 'tollgate.service');
      writeFileSync(
        unit,
        UNIT.replaceAll('/opt/tollgate', ROOT).replace(
          '/etc/tollgate/tollgate.env',
          join(dir, 'tollgate.env'),
        ),
      );
      writeFileSync(join(dir, 'tollgate.env'), ENV_EXAMPLE);
      // Throws (with systemd's complaint) on a non-zero exit.
      execFileSync('systemd-analyze', ['verify', unit], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    },
  );
});
