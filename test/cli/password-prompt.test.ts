import { spawn, spawnSync } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { passwordProblem, verifyPassword } from '../../src/auth/passwords.js';
import { HiddenLineReader, promptNewPassword } from '../../src/cli/password-prompt.js';
import { openStore } from '../../src/store/index.js';
import { BIN, runCli } from '../helpers/cli.js';

/** A terminal's input as the prompt sees it: records raw mode, delivers what the "user" types. */
class FakeTerminal extends EventEmitter {
  isRaw = false;
  readonly rawModes: boolean[] = [];
  paused = true;
  setRawMode(mode: boolean) {
    this.isRaw = mode;
    this.rawModes.push(mode);
    return this;
  }
  resume() {
    this.paused = false;
    return this;
  }
  pause() {
    this.paused = true;
    return this;
  }
  /** Types `text` once the prompt listens, as one chunk (a paste) or key by key. */
  async type(text: string, keyByKey = true) {
    while (this.listenerCount('data') === 0) await new Promise((r) => setImmediate(r));
    if (!keyByKey) {
      this.emit('data', Buffer.from(text));
      return;
    }
    for (const ch of text) {
      // Keys typed after the line ended go to the next prompt, once it listens.
      while (this.listenerCount('data') === 0) await new Promise((r) => setImmediate(r));
      this.emit('data', Buffer.from(ch));
    }
  }
}

function fakeOutput() {
  let written = '';
  return {
    write(text: string) {
      written += text;
    },
    text: () => written,
  };
}

const GOOD = 'correct horse battery staple';

describe('the password prompt on a terminal', () => {
  it('asks twice in raw mode (no echo), writes only the prompts, and restores the terminal', async () => {
    const input = new FakeTerminal();
    const output = fakeOutput();
    const asked = promptNewPassword(input, output, passwordProblem);
    await input.type(`${GOOD}x\x7f\r`);
    await input.type(`${GOOD}\r`);
    expect(await asked).toBe(GOOD);
    expect(output.text()).toBe('Password: \nRepeat the password: \n');
    expect(input.rawModes).toEqual([true, false, true, false]);
    expect(input.isRaw).toBe(false);
    expect(input.paused).toBe(true);
    expect(input.listenerCount('data')).toBe(0);
  });

  it('takes both lines from one paste, and ignores escape sequences', async () => {
    const input = new FakeTerminal();
    const asked = promptNewPassword(input, fakeOutput(), passwordProblem);
    await input.type('\x1b[A', false);
    await input.type(`${GOOD}\r\n${GOOD}\r`, false);
    expect(await asked).toBe(GOOD);
  });

  it('refuses two different passwords, a bad one, Ctrl+C and Ctrl+D', async () => {
    const differ = new FakeTerminal();
    const a = promptNewPassword(differ, fakeOutput(), passwordProblem);
    await differ.type(`${GOOD}\r${GOOD}!\r`, false);
    await expect(a).rejects.toThrow('the two passwords differ');

    const short = new FakeTerminal();
    const b = promptNewPassword(short, fakeOutput(), passwordProblem);
    await short.type('abc\r', false);
    await expect(b).rejects.toThrow(/^password /);

    const cancelled = new FakeTerminal();
    const c = new HiddenLineReader(cancelled, fakeOutput()).read('Password: ');
    await cancelled.type('abc\x03');
    await expect(c).rejects.toMatchObject({ code: 'cancelled', exitCode: 130 });
    expect(cancelled.isRaw).toBe(false);

    const eof = new FakeTerminal();
    const d = new HiddenLineReader(eof, fakeOutput()).read('Password: ');
    await eof.type('\x04');
    await expect(d).rejects.toMatchObject({ exitCode: 2 });
  });
});

/** util-linux `script`, which runs a command on a pseudo-terminal (macOS's takes other arguments). */
const hasScript =
  spawnSync('script', ['--version'], { encoding: 'utf8' }).stdout?.includes('util-linux') === true;

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-tty-'));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('accounts create --password-stdin', () => {
  it.skipIf(!hasScript)(
    'on a real terminal: prompts, does not echo, confirms',
    async () => {
      const env = { DATABASE_URL: `sqlite:${join(dir, 'tty.db')}`, LOG_LEVEL: 'silent' };
      const command = `'${process.execPath}' '${BIN}' accounts create --email tty@example.test --password-stdin --json`;
      const child = spawn('script', ['-qec', command, '/dev/null'], {
        env: { PATH: process.env.PATH ?? '', TERM: 'dumb', ...env },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
      });
      const until = async (pattern: RegExp) => {
        const end = Date.now() + 20_000;
        while (!pattern.test(out)) {
          if (Date.now() > end) throw new Error(`no ${pattern} on the terminal; it shows:\n${out}`);
          await new Promise((r) => setTimeout(r, 20));
        }
      };
      try {
        await until(/Password: /);
        child.stdin.write(`${GOOD}\r`);
        await until(/Repeat the password: /);
        child.stdin.write(`${GOOD}\r`);
        const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
        expect(code).toBe(0);
        expect(out).toContain('"email":"tty@example.test"');
        expect(out).not.toContain(GOOD);
      } finally {
        child.kill('SIGKILL');
      }
      const store = await openStore(env.DATABASE_URL);
      const login = await store.dashboard().findLogin('tty@example.test');
      await store.close();
      expect(await verifyPassword(login?.passwordHash ?? '', GOOD)).toBe(true);
    },
    40_000,
  );

  it('piped: reads stdin as before, no prompt', async () => {
    const env = { DATABASE_URL: `sqlite:${join(dir, 'pipe.db')}`, LOG_LEVEL: 'silent' };
    const r = await runCli(
      ['accounts', 'create', '--email', 'pipe@example.test', '--password-stdin', '--json'],
      env,
      `${GOOD}\n`,
    );
    expect(r.code).toBe(0);
    expect(r.stderr).not.toContain('Password');
    expect(JSON.parse(r.stdout)).toMatchObject({ email: 'pipe@example.test' });
  });
});
