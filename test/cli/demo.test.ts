import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCli, waitForExit } from '../helpers/cli.js';

const exec = promisify(execFile);
let dir: string;
let database: string;
const env = { PORT: '0' };
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-demo-'));
  // The demo reads no DATABASE_URL: --database is how it is given a file other than ./data/demo.db.
  database = `sqlite:${join(dir, 'demo.db')}`;
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

async function runDemo() {
  const started = await startCli(['demo', '--database', database, '--json'], env, /\{"url".*\}\n/);
  const info = JSON.parse(started.firstMatch[0]) as {
    url: string;
    key: string;
    curl: string;
    password: string | null;
  };
  return { ...started, info };
}

describe('bin/tollgate demo', () => {
  it('prints a key and a curl line that gets a completion; a second run issues a new key and revokes the old', async () => {
    const first = await runDemo();
    let oldKey: string;
    try {
      expect(first.info.key).toMatch(/^sk-svc-[0-9a-f]{32}$/);
      expect(first.info.password).toBeTruthy();
      const { stdout } = await exec('sh', ['-c', first.info.curl]);
      const body = JSON.parse(stdout) as {
        object: string;
        choices: Array<{ message: { content: string } }>;
        meta: { balance: number };
      };
      expect(body.object).toBe('chat.completion');
      expect(body.choices[0]?.message.content.length).toBeGreaterThan(0);
      expect(body.meta.balance).toBeLessThan(10);
      oldKey = first.info.key;
    } finally {
      first.child.kill('SIGTERM');
      expect(await waitForExit(first.child)).toBe(0);
    }

    const second = await runDemo();
    try {
      expect(second.info.key).not.toBe(oldKey);
      expect(second.info.password).toBeNull();
      const res = await fetch(`${second.info.url}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${oldKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(res.status).toBe(401);
    } finally {
      second.child.kill('SIGTERM');
      expect(await waitForExit(second.child)).toBe(0);
    }
  });
});
