import { hashPassword, passwordProblem } from '../../auth/passwords.js';
import { CliError, usageError } from '../cli-error.js';
import { normalizeEmail, withStore } from '../context.js';
import type { Output } from '../output.js';

export interface AccountsCreateArgs {
  email: string | undefined;
  passwordStdin: boolean;
  admin: boolean;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

/** `tollgate accounts create --email E [--password-stdin] [--admin]` */
export async function accountsCreate(args: AccountsCreateArgs, out: Output): Promise<void> {
  const email = normalizeEmail(args.email);
  let passwordHash: string | null = null;
  if (args.passwordStdin) {
    const password = await readStdin();
    const problem = passwordProblem(password);
    if (problem) throw usageError(`password ${problem}`);
    passwordHash = await hashPassword(password);
  }
  await withStore(async (store) => {
    const role = args.admin ? 'admin' : 'user';
    const result = await store.createAccount({ email, role, passwordHash });
    if (!result.ok) throw new CliError(`an account with email ${email} already exists`, 1, 'email_taken');
    const a = result.account;
    out.result(
      { id: a.id, email: a.email, role: a.role, created_at: new Date(a.createdAt).toISOString() },
      `Created ${a.role} account ${a.email} (${a.id}).`,
    );
  });
}
