import { randomBytes } from 'node:crypto';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** A random alphanumeric string (rejection sampling keeps it uniform). */
export function randomAlnum(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248) out += ALPHABET[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

/** Completion id in OpenAI's form: `chatcmpl-` + 29 alphanumerics. */
export function newCompletionId(): string {
  return `chatcmpl-${randomAlnum(29)}`;
}
