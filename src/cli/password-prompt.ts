import { CliError } from './cli-error.js';

/** What the prompt needs of a terminal's input: `process.stdin` when it is a TTY, or a test's stand-in. */
export interface TerminalInput {
  isRaw?: boolean;
  setRawMode(mode: boolean): unknown;
  on(event: 'data', listener: (chunk: string | Buffer) => void): unknown;
  on(event: 'end', listener: () => void): unknown;
  removeListener(event: 'data', listener: (chunk: string | Buffer) => void): unknown;
  removeListener(event: 'end', listener: () => void): unknown;
  resume(): unknown;
  pause(): unknown;
}

export interface PromptOutput {
  write(text: string): unknown;
}

const ENTER = new Set(['\r', '\n']);
const CTRL_C = '\x03';
const CTRL_D = '\x04';
const CTRL_U = '\x15';
const BACKSPACE = new Set(['\x7f', '\b']);

/**
 * Reads lines from a terminal in raw mode, so the terminal does not echo what is typed: the password is
 * never shown, nor left in the scroll-back. Raw mode also turns Ctrl+C into a character instead of a
 * signal, so it is handled here (the prompt is cancelled). Characters typed or pasted past one line's end
 * are kept for the next line.
 */
export class HiddenLineReader {
  private pending = '';

  constructor(
    private readonly input: TerminalInput,
    private readonly output: PromptOutput,
  ) {}

  read(prompt: string): Promise<string> {
    this.output.write(prompt);
    const wasRaw = this.input.isRaw === true;
    this.input.setRawMode(true);
    return new Promise<string>((resolve, reject) => {
      let line = '';
      const finish = (err: CliError | undefined, rest: string) => {
        this.input.removeListener('data', onData);
        this.input.removeListener('end', onEnd);
        this.input.setRawMode(wasRaw);
        this.input.pause();
        this.pending = rest;
        this.output.write('\n');
        if (err) reject(err);
        else resolve(line);
      };
      const take = (text: string): boolean => {
        // Arrow keys and the like arrive as escape sequences: not part of a password.
        if (text.startsWith('\x1b')) return false;
        const chars = Array.from(text);
        for (let i = 0; i < chars.length; i++) {
          const ch = chars[i] as string;
          if (ENTER.has(ch)) {
            // A pasted "\r\n" ends one line, not two.
            const next = ch === '\r' && chars[i + 1] === '\n' ? i + 2 : i + 1;
            finish(undefined, chars.slice(next).join(''));
            return true;
          }
          if (ch === CTRL_C) {
            finish(new CliError('cancelled', 130, 'cancelled'), '');
            return true;
          }
          if (ch === CTRL_D && line === '') {
            finish(new CliError('no password was typed', 2, 'usage'), '');
            return true;
          }
          if (BACKSPACE.has(ch)) line = Array.from(line).slice(0, -1).join('');
          else if (ch === CTRL_U) line = '';
          else if (ch >= ' ') line += ch;
        }
        return false;
      };
      const onData = (chunk: string | Buffer) => {
        take(typeof chunk === 'string' ? chunk : chunk.toString('utf8'));
      };
      const onEnd = () => finish(new CliError('no password was typed (the input ended)', 2, 'usage'), '');
      const pending = this.pending;
      this.pending = '';
      if (pending !== '' && take(pending)) return;
      this.input.on('data', onData);
      this.input.on('end', onEnd);
      this.input.resume();
    });
  }
}

/**
 * Asks for a new password twice on a terminal, without echo, and returns it once both agree. `check`
 * says what is wrong with a password (too short, …) before it is asked again.
 */
export async function promptNewPassword(
  input: TerminalInput,
  output: PromptOutput,
  check: (password: string) => string | undefined,
): Promise<string> {
  const reader = new HiddenLineReader(input, output);
  const password = await reader.read('Password: ');
  const problem = check(password);
  if (problem) throw new CliError(`password ${problem}`, 2, 'usage');
  const again = await reader.read('Repeat the password: ');
  if (again !== password) throw new CliError('the two passwords differ; nothing was changed', 2, 'usage');
  return password;
}
