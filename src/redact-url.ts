/**
 * `postgres://user:secret@host/db` → `postgres://user:***@host/db` (also `redis://:secret@host`): a
 * connection URL as it may appear in messages and logs.
 */
export function redactUrlPassword(url: string): string {
  return url.replace(/(\/\/[^:/@]*:)[^@]*@/, '$1***@');
}
