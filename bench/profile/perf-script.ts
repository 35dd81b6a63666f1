/**
 * Reading `perf script -F tid,ip,sym` output (side-effect free, so the tests can import it): which part of
 * a Node process each sample's time belongs to, by the innermost JavaScript frame of its call stack.
 */

/** One sample: the thread it was taken on and its frames' symbols, innermost first. */
export interface PerfSample {
  tid: string;
  frames: string[];
}

/**
 * The samples of `perf script -F tid,ip,sym` (with call graphs: `perf record -g`): a header line per sample
 * (the thread id first, perhaps padded) followed by one tab-indented `address symbol` line per frame, a
 * blank line between samples. A frame perf cannot name is `[unknown]`.
 */
export function parsePerfScript(text: string): PerfSample[] {
  const samples: PerfSample[] = [];
  let current: PerfSample | undefined;
  for (const line of text.split('\n')) {
    if (line.trim() === '') {
      if (current) samples.push(current);
      current = undefined;
      continue;
    }
    if (line.startsWith('\t')) {
      if (!current) continue;
      const frame = line.trim();
      const space = frame.indexOf(' ');
      current.frames.push(space < 0 ? '[unknown]' : frame.slice(space + 1));
      continue;
    }
    if (current) samples.push(current);
    current = { tid: line.trim().split(/\s+/)[0] ?? '', frames: [] };
  }
  if (current) samples.push(current);
  return samples;
}

/** The part of the process a frame's code belongs to, or undefined for a frame that is not JavaScript. */
export function jsOwner(frame: string): string | undefined {
  // V8's perf map names JavaScript `JS:<tier marker><function> <url>:<line>:<column>`.
  if (!frame.startsWith('JS:')) return undefined;
  const tollgate = frame.match(/\/dist\/(?:src\/)?([\w-]+)\//);
  if (tollgate?.[1] && !frame.includes('/node_modules/')) {
    return tollgate[1] === 'bench' ? 'the benchmark script (bench/)' : `Tollgate src/${tollgate[1]}`;
  }
  const pkg = frame.match(/\/node_modules\/((?:@[^/]+\/)?[^/]+)\//);
  if (pkg?.[1]) return pkg[1];
  const builtin = frame.match(/ node:([\w/]+?)(?::\d+)/);
  if (builtin?.[1]) return `node:${builtin[1]}`;
  if (frame.includes('wasm')) return "WebAssembly (undici's llhttp)";
  // Tollgate's one worker started from source text: the WAL checkpoint thread
  // (src/store/sqlite/checkpointer.ts).
  if (frame.includes('[worker eval]')) return 'Tollgate src/store (WAL checkpoint thread)';
  // Functions compiled at run time from generated source have no URL: ajv's validators are named validateN.
  if (/^JS:\W?validate\d+ /.test(frame)) return 'ajv (compiled validators)';
  return 'JavaScript the perf map does not name';
}

/** Samples with no JavaScript frame on their stack: the event loop, system calls, V8's own threads. */
export const NO_JS = '(no JavaScript frame)';

/**
 * Samples counted by the owner of their innermost JavaScript frame (`jsOwner`), so native code (SQLite,
 * V8's runtime, the kernel) counts for the JavaScript that called it. Code inlined into an optimised
 * function counts for that function's module.
 */
export function samplesByOwner(samples: readonly PerfSample[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const sample of samples) {
    let owner = NO_JS;
    for (const frame of sample.frames) {
      const found = jsOwner(frame);
      if (found !== undefined) {
        owner = found;
        break;
      }
    }
    counts.set(owner, (counts.get(owner) ?? 0) + 1);
  }
  return counts;
}
