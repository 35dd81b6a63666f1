import { randomBytes } from 'node:crypto';

/** A new row id: `prefix_` and 24 random hex digits. */
export function newId(prefix: string): string {
  return `${prefix}_${randomBytes(12).toString('hex')}`;
}
