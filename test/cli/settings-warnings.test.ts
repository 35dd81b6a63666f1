import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exitWithin, startIn } from './cli-process.js';

// A misspelt setting is not ignored in silence: the server warns about it once at start, naming it and
// the setting meant, and starts all the same.

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-settings-warnings-'));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** The JSON log lines of a server's output, parsed. */
function logLines(output: string): { level: number; msg: string }[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{"level"'))
    .map((line) => JSON.parse(line) as { level: number; msg: string });
}

describe('bin/tollgate serve and a setting that matches nothing', () => {
  it('logs one warning per misspelt PROV_ variable or config-file key, with the nearest name', async () => {
    const configFile = join(dir, 'tollgate.json');
    writeFileSync(configFile, JSON.stringify({ STREAMIN: 'on' }));
    const server = await startIn(
      dir,
      ['serve', '--json'],
      {
        DATABASE_URL: `sqlite:${join(dir, 'serve.db')}`,
        PORT: '0',
        HOST: '127.0.0.1',
        TOLLGATE_CONFIG: configFile,
        PROV_DEEPSEK_API_KEY: 'sk-misspelt',
        PROV_QWEN_API_KEY: 'sk-right',
      },
      /\{"url".*\}\n/,
    );
    try {
      const ready = JSON.parse(server.match[0]) as { active_providers: string[] };
      expect(ready.active_providers).toEqual(['prov-qwen']);
      // The log is written asynchronously: the warnings may follow the ready line by a moment.
      let warnings = logLines(server.output()).filter((l) => l.level === 40);
      for (let i = 0; i < 100 && warnings.length < 2; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        warnings = logLines(server.output()).filter((l) => l.level === 40);
      }
      expect(warnings.map((w) => w.msg)).toEqual([
        'PROV_DEEPSEK_API_KEY is set but matches no setting: did you mean PROV_DEEPSEEK_API_KEY?',
        `TOLLGATE_CONFIG: "STREAMIN" in ${configFile} matches no setting: did you mean STREAMING?`,
      ]);
      // The misspelt key's value is never printed.
      expect(server.output()).not.toContain('sk-misspelt');
    } finally {
      server.child.kill('SIGTERM');
      expect(await exitWithin(server.child, 15_000)).toBe(0);
    }
  }, 60_000);
});
