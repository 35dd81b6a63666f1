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

/** One line of V8's perf map (`/tmp/perf-<pid>.map`, written with `--perf-basic-prof`). */
export interface PerfMapEntry {
  start: number;
  size: number;
  name: string;
  /** Line number: V8 reuses code space, and a later line for an address is the code there now. */
  order: number;
}

/** The entries of a perf map, sorted by start address. */
export function parsePerfMap(text: string): PerfMapEntry[] {
  const entries: PerfMapEntry[] = [];
  for (const line of text.split('\n')) {
    const match = line.match(/^([0-9a-f]+) ([0-9a-f]+) (.+)$/);
    if (!match?.[1] || !match[2] || !match[3]) continue;
    entries.push({
      start: Number.parseInt(match[1], 16),
      size: Number.parseInt(match[2], 16),
      name: match[3],
      order: entries.length,
    });
  }
  return entries.sort((a, b) => a.start - b.start || a.order - b.order);
}

/** The latest perf-map entry whose code covers `address`. */
function covering(map: readonly PerfMapEntry[], maxSize: number, address: number): PerfMapEntry | undefined {
  let lo = 0;
  let hi = map.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((map[mid] as PerfMapEntry).start <= address) lo = mid + 1;
    else hi = mid;
  }
  let best: PerfMapEntry | undefined;
  for (let i = lo - 1; i >= 0; i--) {
    const entry = map[i] as PerfMapEntry;
    if (entry.start + maxSize <= address) break;
    if (address < entry.start + entry.size && (!best || entry.order > best.order)) best = entry;
  }
  return best;
}

/**
 * The self counts of a `callgrind_annotate` listing (exclusive, the default) by function, with the JIT code
 * callgrind can only name by address (`???:0x…`) named from V8's perf map: `JS:*name file:line:col`, where
 * V8's marker says the tier (`*` optimised, `^` baseline, `+` Maglev, `~` interpreted); code the map does
 * not cover is `(JIT code not in the perf map)`. Functions callgrind names itself keep their names. Counts
 * are as listed (divide by the requests counted for per-request figures).
 */
export function selfCountsByFunction(listing: string, map: readonly PerfMapEntry[]): Map<string, number> {
  const maxSize = map.reduce((max, e) => Math.max(max, e.size), 0);
  const counts = new Map<string, number>();
  for (const line of listing.split('\n')) {
    const match = line.match(/^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.+?)\s*$/);
    if (!match?.[1] || !match[2] || match[2] === 'PROGRAM TOTALS') continue;
    const count = Number(match[1].replaceAll(',', ''));
    const address = match[2].match(/^\?\?\?:0x([0-9a-f]+) \[\?\?\?\]$/);
    const name = address?.[1]
      ? (covering(map, maxSize, Number.parseInt(address[1], 16))?.name ?? '(JIT code not in the perf map)')
      : match[2];
    counts.set(name, (counts.get(name) ?? 0) + count);
  }
  return counts;
}
