import { randomBytes } from 'node:crypto';

/**
 * Argon2id with OWASP's recommended minimum parameters (m = 19 MiB, t = 2, p = 1):
 * https://cheatsheetseries.owasp.org/cheatsheets/Password_Storage_Cheat_Sheet.html#argon2id
 */
// `algorithm: 2` is Algorithm.Argon2id (an ambient const enum, which isolated modules cannot reference).
const PARAMS = { algorithm: 2, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

export const MIN_PASSWORD_LENGTH = 12;
export const MAX_PASSWORD_LENGTH = 1024;

// The native module (megabytes of resident memory) is loaded on the first password operation, not at start.
let argon2: Promise<typeof import('@node-rs/argon2')> | undefined;
const loadArgon2 = () => {
  argon2 ??= import('@node-rs/argon2');
  return argon2;
};

export async function hashPassword(password: string): Promise<string> {
  const { hash } = await loadArgon2();
  return hash(password, PARAMS);
}

export async function verifyPassword(passwordHash: string, password: string): Promise<boolean> {
  const { verify } = await loadArgon2();
  return verify(passwordHash, password).catch(() => false);
}

/** Returns a reason the password is unacceptable, or undefined when it is fine. */
export function passwordProblem(password: string): string | undefined {
  if (password.length < MIN_PASSWORD_LENGTH) return `must be at least ${MIN_PASSWORD_LENGTH} characters`;
  if (password.length > MAX_PASSWORD_LENGTH) return `must be at most ${MAX_PASSWORD_LENGTH} characters`;
  return undefined;
}

let unmatchable: Promise<string> | undefined;

/**
 * Spends the time of one verification and fails: used for an unknown email, so a login for an email
 * without an account takes as long as a wrong password for one with an account.
 */
export async function verifyNothing(password: string): Promise<false> {
  unmatchable ??= hashPassword(randomBytes(32).toString('hex'));
  await verifyPassword(await unmatchable, password);
  return false;
}
