/**
 * Reading `callgrind_annotate --inclusive=yes` listings (side-effect free, so the tests can import it).
 */

/**
 * Instructions spent inside better-sqlite3 in one thread's listing: the sum of the inclusive counts of the
 * addon's entry points from JavaScript (`Statement::JS_run`, `Statement::JS_get`, … `Database::JS_…` and
 * `StatementIterator::JS_…`). Apart from the constructors (`JS_new`, which `Database::JS_prepare` and
 * `Statement::JS_iterate` call, and are left out) they do not call one another, so the sum counts nothing
 * twice. `undefined` when the listing has none (a process that does not use the addon).
 */
export function betterSqliteInstructions(listing: string): number | undefined {
  let total = 0;
  let found = false;
  for (const line of listing.split('\n')) {
    const match = line.match(
      /^\s*([\d,]+)\s.*:(?:Database|Statement|StatementIterator)::(?!JS_new\()JS_\w+\([^'[]*\)\s+\[[^\]]*better_sqlite3\.node\]\s*$/,
    );
    if (!match?.[1]) continue;
    total += Number(match[1].replaceAll(',', ''));
    found = true;
  }
  return found ? total : undefined;
}
