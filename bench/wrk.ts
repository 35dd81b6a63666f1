/**
 * The c50 closed loop on wrk (`apt-get install wrk`): C, a fraction of a Node client's CPU per request.
 * One run is one process (`-t1 -cN -dS`) whose Lua script sets the request (`Authorization` values in
 * turn) and prints its figures as one JSON line from `done()`; statuses above 399 count as errors.
 *
 * @see https://github.com/wg/wrk/blob/master/SCRIPTING
 */
import { spawn } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import type { RequestSpec } from './raw-http.js';

export interface WrkSummary {
  /** wrk's own measured duration, µs. */
  durationUs: number;
  /** Answers completed (any status). */
  requests: number;
  /** Answers with a status above 399. */
  status: number;
  connect: number;
  read: number;
  write: number;
  timeout: number;
  /** Latency of the completed answers, ms. */
  latency: { mean: number; p50: number; p90: number; p99: number; p999: number; max: number };
}

const MARKER = 'TOLLGATE_WRK ';

/** The absolute path of `wrk` on PATH, or undefined. */
export function findWrk(path = process.env.PATH ?? ''): string | undefined {
  for (const dir of path.split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, 'wrk');
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** A Lua string literal of `text` (bytes outside printable ASCII, quotes and backslashes as `\ddd`). */
export function luaString(text: string): string {
  let out = '"';
  for (const byte of Buffer.from(text, 'utf8')) {
    const printable = byte >= 0x20 && byte < 0x7f && byte !== 0x22 && byte !== 0x5c;
    out += printable ? String.fromCharCode(byte) : `\\${String(byte).padStart(3, '0')}`;
  }
  return `${out}"`;
}

/** The Lua script of a run: the request, and `done()` printing the figures as one JSON line. */
export function wrkScript(request: RequestSpec, bodyFile: string): string {
  const auths = request.authorizations ?? [];
  // wrk adds Host and Content-Length itself; Authorization comes from the list when there is one.
  const skip = auths.length > 0 ? /^(content-length|host|authorization)$/i : /^(content-length|host)$/i;
  const headers = Object.entries(request.headers)
    .filter(([name]) => !skip.test(name))
    .map(([name, value]) => `wrk.headers[${luaString(name)}] = ${luaString(value)}`);
  const lines = [
    `wrk.method = ${luaString(request.method)}`,
    ...headers,
    `local file = assert(io.open(${luaString(bodyFile)}, "rb"))`,
    'wrk.body = file:read("*a")',
    'file:close()',
  ];
  if (auths.length > 1) {
    // Formatted once per key in init(); request() hands them out in turn.
    lines.push(
      `local auths = { ${auths.map(luaString).join(', ')} }`,
      'local prepared = {}',
      'local turn = 0',
      'function init(args)',
      '  for i, value in ipairs(auths) do',
      '    wrk.headers["authorization"] = value',
      '    prepared[i] = wrk.format()',
      '  end',
      'end',
      'function request()',
      '  turn = turn % #prepared + 1',
      '  return prepared[turn]',
      'end',
    );
  } else if (auths.length === 1) {
    lines.push(`wrk.headers["authorization"] = ${luaString(auths[0] as string)}`);
  }
  lines.push(
    'function done(summary, latency, requests)',
    '  local e = summary.errors',
    '  local function p(q) return latency:percentile(q) end',
    `  io.write(string.format('${MARKER}{"durationUs":%d,"requests":%d,"status":%d,"connect":%d,"read":%d,"write":%d,"timeout":%d,"mean":%.3f,"p50":%d,"p90":%d,"p99":%d,"p999":%d,"max":%d}\\n',`,
    '    summary.duration, summary.requests, e.status, e.connect, e.read, e.write, e.timeout,',
    '    latency.mean, p(50), p(90), p(99), p(99.9), latency.max))',
    'end',
  );
  return `${lines.join('\n')}\n`;
}

/** Parses the figures out of wrk's output; throws with the output when they are not there. */
export function parseWrkOutput(output: string): WrkSummary {
  const line = output.split('\n').find((l) => l.startsWith(MARKER));
  if (!line) throw new Error(`wrk printed no figures:\n${output.slice(-2000)}`);
  const raw = JSON.parse(line.slice(MARKER.length)) as Record<string, number>;
  const requests = raw.requests as number;
  // wrk's latency is in µs, and meaningless without an answer.
  const ms = (key: string) => (requests === 0 ? Number.NaN : (raw[key] as number) / 1000);
  return {
    durationUs: raw.durationUs as number,
    requests,
    status: raw.status as number,
    connect: raw.connect as number,
    read: raw.read as number,
    write: raw.write as number,
    timeout: raw.timeout as number,
    latency: {
      mean: ms('mean'),
      p50: ms('p50'),
      p90: ms('p90'),
      p99: ms('p99'),
      p999: ms('p999'),
      max: ms('max'),
    },
  };
}

/** A request prepared for wrk: its script (and body) in a temporary directory, removed by `dispose`. */
export class WrkRun {
  private readonly dir: string;
  readonly script: string;

  constructor(
    private readonly wrkPath: string,
    private readonly request: RequestSpec,
  ) {
    this.dir = mkdtempSync(join(tmpdir(), 'tollgate-wrk-'));
    const bodyFile = join(this.dir, 'body');
    writeFileSync(bodyFile, request.body);
    this.script = join(this.dir, 'request.lua');
    writeFileSync(this.script, wrkScript(request, bodyFile));
  }

  /**
   * One wrk process: `connections` connections on one thread for `seconds` (whole seconds: wrk's `-d`
   * takes no fraction; at least 1). Resolves with its figures once it has exited.
   */
  run(connections: number, seconds: number): Promise<WrkSummary> {
    const args = [
      '-t1',
      `-c${String(connections)}`,
      `-d${String(Math.max(1, Math.round(seconds)))}s`,
      '--timeout',
      '30s',
      '-s',
      this.script,
      this.request.url,
    ];
    return new Promise((resolve, reject) => {
      const child = spawn(this.wrkPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        output += chunk;
      });
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
        output += chunk;
      });
      child.on('error', reject);
      child.on('close', (code) => {
        if (code !== 0) {
          reject(new Error(`wrk exited with ${String(code)}:\n${output.slice(-2000)}`));
          return;
        }
        try {
          resolve(parseWrkOutput(output));
        } catch (err) {
          reject(err);
        }
      });
    });
  }

  dispose(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
