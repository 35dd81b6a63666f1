import { randomBytes } from 'node:crypto';
import { hashPassword, passwordProblem } from '../../auth/passwords.js';
import { CliError, usageError } from '../cli-error.js';
import { accountByEmail, normalizeEmail, withStore } from '../context.js';
import type { Output } from '../output.js';
import { promptNewPassword } from '../password-prompt.js';

export interface AccountsCreateArgs {
  email: string | undefined;
  passwordStdin: boolean;
  admin: boolean;
}

/** A password piped in (`echo … | tollgate accounts create --password-stdin`): all of stdin, less one newline. */
async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

/**
 * The dashboard password to set: read from stdin (`--password-stdin`, never from argv, which other users
 * of the machine and shell histories can see) — on a terminal, asked for twice without echo; piped, read
 * whole — or generated (24 characters from the CSPRNG) when `generate` and returned so it can be printed
 * once.
 */
async function passwordFrom(stdin: boolean, generate: boolean) {
  if (stdin) {
    // The prompt goes to stderr: with --json, stdout carries the one JSON result.
    const password = process.stdin.isTTY
      ? await promptNewPassword(process.stdin, process.stderr, passwordProblem)
      : await readStdin();
    const problem = passwordProblem(password);
    if (problem) throw usageError(`password ${problem}`);
    return { hash: await hashPassword(password), generated: undefined };
  }
  if (!generate) return { hash: null, generated: undefined };
  const password = randomBytes(18).toString('base64url');
  return { hash: await hashPassword(password), generated: password };
}

/**
 * `tollgate accounts create --email E [--password-stdin] [--admin]`. An admin always gets a dashboard
 * password: the one on stdin, or a generated one printed once. A user without `--password-stdin` can
 * use keys made with `keys create` but cannot log in to the dashboard until `accounts password`. The
 * first step of a new installation, so it may create the SQLite database (and says so when it does).
 */
export async function accountsCreate(args: AccountsCreateArgs, out: Output): Promise<void> {
  const email = normalizeEmail(args.email);
  const password = await passwordFrom(args.passwordStdin, args.admin);
  await withStore(
    async (store) => {
      const role = args.admin ? 'admin' : 'user';
      const result = await store.createAccount({ email, role, passwordHash: password.hash });
      if (!result.ok) throw new CliError(`an account with email ${email} already exists`, 1, 'email_taken');
      const a = result.account;
      out.result(
        {
          id: a.id,
          email: a.email,
          role: a.role,
          created_at: new Date(a.createdAt).toISOString(),
          ...(password.generated ? { password: password.generated } : {}),
        },
        `Created ${a.role} account ${a.email} (${a.id}).` +
          (password.generated
            ? `\nDashboard password (shown once, change it after logging in): ${password.generated}`
            : ''),
      );
    },
    { create: { out } },
  );
}

/**
 * `tollgate accounts password --email E [--password-stdin]` — sets a new dashboard password (from stdin,
 * or generated and printed once) and ends every dashboard session of the account.
 */
export async function accountsPassword(
  args: { email: string | undefined; passwordStdin: boolean },
  out: Output,
): Promise<void> {
  const email = normalizeEmail(args.email);
  const password = await passwordFrom(args.passwordStdin, true);
  if (!password.hash) throw new Error('no password to set');
  const hash = password.hash;
  await withStore(async (store) => {
    const account = await accountByEmail(store, email);
    await store.dashboard().changePassword({
      accountId: account.id,
      passwordHash: hash,
      session: undefined,
    });
    out.result(
      {
        id: account.id,
        email: account.email,
        ...(password.generated ? { password: password.generated } : {}),
      },
      `Set a new dashboard password for ${account.email}; its sessions were ended.` +
        (password.generated ? `\nPassword (shown once): ${password.generated}` : ''),
    );
  });
}
