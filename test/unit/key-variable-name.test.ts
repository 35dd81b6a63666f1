import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

// One name for the variable that holds a user's Tollgate key in every snippet: the README, the docs, the
// dashboard's snippets and the demo's hint all say TOLLGATE_KEY.

const ROOT = join(import.meta.dirname, '..', '..');
const NAME = 'TOLLGATE_KEY';
/** Names seen in the wild for the same thing. */
const OTHER_NAMES = /\bTOLLGATE_(?:API_KEY|APIKEY|SECRET|TOKEN)\b/;

function tracked(...pathspecs: string[]): string[] {
  return execFileSync('git', ['ls-files', '--', ...pathspecs], { cwd: ROOT, encoding: 'utf8' })
    .split('\n')
    .filter(Boolean);
}

describe(`the key variable of the snippets is ${NAME}`, () => {
  it('no other name anywhere in the sources, the dashboard or the docs', () => {
    const files = tracked('README.md', 'docs', 'src', 'web/src', 'scripts', 'bin', 'deploy');
    expect(files.length).toBeGreaterThan(50);
    const offenders = files.filter((f) => OTHER_NAMES.test(readFileSync(join(ROOT, f), 'utf8')));
    expect(offenders).toEqual([]);
  });

  it('the README, the dashboard snippets and the demo all use it', () => {
    for (const file of ['README.md', 'web/src/components/getting-started.tsx', 'src/cli/commands/demo.ts'])
      expect(readFileSync(join(ROOT, file), 'utf8'), file).toContain(NAME);
  });
});
