/**
 * The PostgreSQL statements run on every call, by their SQL text, each with the name it is prepared under
 * (once per connection: the server parses and plans it once, then only binds and executes it). Kept
 * apart from `open.ts` so that registering a statement does not load the driver.
 */
const names = new Map<string, string>();
/** A bound on the registry, should a caller ever register texts that vary per call (a bug). */
const MAX_NAMED = 32;

/** Asks for `sqlText` to run as a named prepared statement; its name is derived from `label`. */
export function prepareByName(sqlText: string, label: string): void {
  if (names.has(sqlText) || names.size >= MAX_NAMED) return;
  // One name per text: pg refuses a name reused for another text on the same connection.
  names.set(sqlText, `tollgate_${label}_${names.size}`);
}

/** The name `sqlText` is prepared under, or undefined for a statement sent unnamed. */
export function preparedNameOf(sqlText: string): string | undefined {
  return names.get(sqlText);
}
