/**
 * `npm run bench:scaling` — does the cost per request stay flat where it should?
 *
 * (a) prompt size 1 KB → 1 MB: Tollgate on SQLite against the bare proxy at the same body size, so the ratio
 *     and the difference isolate what the gateway adds per byte (the upstream's cost grows with the prompt
 *     for both);
 * (b) 10 → 1,000,000 accounts with a key each, requests spread over up to 1,000 of those keys;
 * (c) 0 → 10,000,000 past requests (usage rows with their charges) on 1,000 accounts;
 * (d) 0 → 10,000,000 past requests of ONE account: the latency of its `GET /api/v1/key` (today's and this
 *     month's spend), beside what summing its rows of the month takes, measured in the same run; the
 *     answer's spend is checked against those sums.
 *
 * Each level: c50 closed loop for a short window, req/s and the gateway's CPU µs per request. Bulk data is
 * inserted straight into the real schema (bench/bulk-insert.ts); its timing is printed. Writes
 * `bench/results/scaling-<ISO time>.json`. See bench/README.md.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import { hashPassword } from '../src/auth/passwords.js';
import { openStore } from '../src/store/index.js';
import { fillSpendCounters } from '../src/store/migrations.js';
import { spendStarts } from '../src/store/spend.js';
import { openSqliteStore } from '../src/store/sqlite/store.js';
import {
  BYTES_PER_ACCOUNT,
  BYTES_PER_PAST_REQUEST,
  bulkAccounts,
  bulkUsage,
  freeBytes,
} from './bulk-insert.js';
import type { ClosedResult } from './loadgen.js';
import { parseSize, readFlags } from './options.js';
import {
  chooseGenerator,
  cleanupAll,
  compileChildScripts,
  detectPinning,
  GENERATOR_FLAG,
  LoadGen,
  NO_PIN_FLAG,
  type Pinning,
  pinSelf,
} from './processes.js';
import { fmt, machineInfo, table, writeResults } from './report.js';
import { median } from './stats.js';
import {
  type ChatMessage,
  type RunningTarget,
  startBareTarget,
  startTollgate,
  type TargetContext,
  tempDir,
} from './targets.js';

const flags = readFlags('npm run bench:scaling --', {
  duration: { type: 'string', help: 'seconds measured per level (default 5)' },
  warmup: { type: 'string', help: 'seconds of warm-up per level (default 2)' },
  runs: { type: 'string', help: 'measurements per level, median reported (default 1)' },
  only: { type: 'string', help: 'comma-separated parts: prompt,accounts,usage,spend' },
  'max-prompt': { type: 'string', help: 'largest prompt, e.g. 100KiB (default 1MiB)' },
  'max-accounts': { type: 'string', help: 'most accounts, e.g. 10000 or 1m (default 1m)' },
  'max-usage': { type: 'string', help: 'most past requests, e.g. 100000 or 10m (default 10m)' },
  keys: { type: 'string', help: 'keys the requests are spread over (default 1000)' },
  connections: { type: 'string', help: 'closed-loop connections (default 50)' },
  'no-pin': NO_PIN_FLAG,
  generator: GENERATOR_FLAG,
  env: {
    type: 'string',
    help: "Tollgate's extra environment, e.g. SQLITE_CACHE_MB=16,METRICS_ENABLED=false",
  },
});

const options = {
  durationSec: flags.number('duration', 5),
  warmupSec: flags.number('warmup', 2),
  runs: Math.max(1, Math.round(flags.number('runs', 1))),
  connections: Math.max(1, Math.round(flags.number('connections', 50))),
  keys: Math.max(1, Math.round(flags.number('keys', 1000))),
  maxPrompt: parseSize(flags.string('max-prompt') ?? '1MiB'),
  maxAccounts: parseSize(flags.string('max-accounts') ?? '1000000'),
  maxUsage: parseSize(flags.string('max-usage') ?? '10000000'),
  tollgateEnv: flags.env('env'),
};
const parts = flags.list('only') ?? ['prompt', 'accounts', 'usage', 'spend'];
const closedLoop = chooseGenerator(flags.string('generator'));

const startedAt = new Date();
const log = (line: string) => {
  const t = ((Date.now() - startedAt.getTime()) / 1000).toFixed(0).padStart(4);
  process.stderr.write(`[${t}s] ${line}\n`);
};

/** The default levels up to `max`, and `max` itself when it is not one of them. */
function levels(defaults: readonly number[], max: number): number[] {
  const out = defaults.filter((v) => v <= max);
  if (!out.includes(max)) out.push(max);
  return out.sort((a, b) => a - b);
}

const WORDS =
  'the quiet harbor keeps its lanterns burning while patient ships wait for morning tides and distant bells count slow hours across green hills where gentle rivers carry stories toward open water'.split(
    ' ',
  );

/** A conversation of about `bytes` bytes of text, in messages of at most 4 KiB, ending with the user. */
export function promptMessages(bytes: number): ChatMessage[] {
  const perMessage = 4096;
  const count = Math.max(1, Math.ceil(bytes / perMessage));
  const messages: ChatMessage[] = [];
  let w = 0;
  for (let m = 0; m < count; m++) {
    const size = Math.min(perMessage, bytes - m * perMessage);
    let text = '';
    while (text.length < size) text += `${WORDS[w++ % WORDS.length]} `;
    messages.push({
      role: (count - 1 - m) % 2 === 0 ? 'user' : 'assistant',
      content: text.slice(0, Math.max(1, size)),
    });
  }
  return messages;
}

interface Measured {
  rps?: number;
  cpuUsPerReq?: number;
  /** How busy the load generator's CPU (shared with the upstream simulator) was, median of the runs, 0..1. */
  loadCpuBusy?: number;
  errorRate: number;
  runs: ClosedResult[];
}

async function measureC50(pinning: Pinning, start: () => Promise<RunningTarget>): Promise<Measured> {
  const results: ClosedResult[] = [];
  const cpu: (number | undefined)[] = [];
  for (let run = 0; run < options.runs; run++) {
    const loadgen = LoadGen.start(pinning.load);
    let target: RunningTarget | undefined;
    try {
      target = await start();
      const result = await loadgen.run<ClosedResult>({
        kind: 'closed',
        generator: closedLoop.generator,
        request: target.request,
        connections: options.connections,
        warmupSec: options.warmupSec,
        durationSec: options.durationSec,
        cpu: [{ pid: target.pid, withDescendants: target.withDescendants }],
      });
      results.push(result);
      const done = result.ok + result.non200;
      const used = result.cpuUs[0];
      cpu.push(used === undefined || done === 0 ? undefined : used / done);
    } finally {
      await target?.stop().catch(() => undefined);
      await loadgen.close();
    }
  }
  const rps = median(results.map((r) => r.rps));
  const cpuUsPerReq = median(cpu);
  const loadCpuBusy = median(results.map((r) => r.loadCpuBusy));
  return {
    ...(rps === undefined ? {} : { rps }),
    ...(cpuUsPerReq === undefined ? {} : { cpuUsPerReq }),
    ...(loadCpuBusy === undefined ? {} : { loadCpuBusy }),
    errorRate: Math.max(0, ...results.map((r) => r.errorRate)),
    runs: results,
  };
}

function busyCell(m: Measured): string {
  return m.loadCpuBusy === undefined ? '—' : fmt(m.loadCpuBusy * 100);
}

function errorsCell(m: Measured): string {
  return `${fmt(m.errorRate * 100, 2)}%${m.errorRate > 0.01 ? ' !' : ''}`;
}

function ratio(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined || b === undefined || b === 0 ? undefined : a / b;
}

function dbSizeMb(file: string): number | undefined {
  let total = 0;
  for (const suffix of ['', '-wal', '-shm']) {
    try {
      total += statSync(file + suffix).size;
    } catch {
      // absent
    }
  }
  return total === 0 ? undefined : total / 1024 / 1024;
}

async function migrateSqlite(file: string): Promise<string> {
  const url = `sqlite:${file}`;
  const store = await openStore(url);
  await store.migrate();
  await store.close();
  return url;
}

// ── (a) prompt size ──────────────────────────────────────────────────────────

interface PromptRow {
  bytes: number;
  messages: number;
  bare: Measured;
  tollgate: Measured;
}

async function promptSizes(pinning: Pinning): Promise<PromptRow[]> {
  const rows: PromptRow[] = [];
  for (const bytes of levels([1024, 10 * 1024, 100 * 1024, 1024 * 1024], options.maxPrompt)) {
    const messages = promptMessages(bytes);
    const temp = tempDir('prompt');
    try {
      const ctx: TargetContext = {
        pinning,
        dir: temp.dir,
        pgAdminUrl: '',
        messages,
        tollgateEnv: {
          ...options.tollgateEnv,
          BODY_LIMIT_BYTES: String(Math.max(4 * 1024 * 1024, 2 * bytes + 64 * 1024)),
        },
      };
      log(`prompt ${kb(bytes)} (${messages.length} messages): bare proxy`);
      const bare = await measureC50(pinning, () => startBareTarget(ctx));
      log(`prompt ${kb(bytes)}: Tollgate`);
      const tollgate = await measureC50(pinning, async () => {
        const file = join(temp.dir, `size-${bytes}-${process.hrtime.bigint()}.db`);
        return startTollgate(ctx, { name: 'sqlite', databaseUrl: `sqlite:${file}` });
      });
      rows.push({ bytes, messages: messages.length, bare, tollgate });
    } finally {
      temp.remove();
    }
  }
  return rows;
}

function kb(bytes: number): string {
  return bytes >= 1024 * 1024
    ? `${(bytes / 1024 / 1024).toFixed(0)} MiB`
    : `${(bytes / 1024).toFixed(0)} KiB`;
}

// ── (b) accounts and keys, (c) usage rows ────────────────────────────────────

interface DataRow {
  rows: number;
  keysUsed: number;
  insertSeconds: number;
  dbMb?: number;
  tollgate: Measured;
}

function enoughDisk(dir: string, needed: number, what: string): boolean {
  const free = freeBytes(dir);
  if (free === undefined || free > needed * 1.3 + 1024 ** 3) return true;
  log(
    `skipping ${what}: needs about ${(needed / 1024 ** 3).toFixed(1)} GiB, ${(free / 1024 ** 3).toFixed(1)} GiB free`,
  );
  return false;
}

async function accountCounts(pinning: Pinning): Promise<DataRow[]> {
  const rows: DataRow[] = [];
  for (const count of levels([10, 10_000, 1_000_000], options.maxAccounts)) {
    const temp = tempDir('accounts');
    try {
      if (!enoughDisk(temp.dir, count * BYTES_PER_ACCOUNT, `${count} accounts`)) continue;
      const file = join(temp.dir, 'tollgate.db');
      const url = await migrateSqlite(file);
      log(`accounts ${count.toLocaleString('en-US')}: bulk insert`);
      const bulk = bulkAccounts(file, count, { sample: options.keys, progress: (l) => log(`  ${l}`) });
      log(`accounts ${count.toLocaleString('en-US')}: inserted in ${bulk.seconds.toFixed(1)} s; measuring`);
      const ctx: TargetContext = { pinning, dir: temp.dir, pgAdminUrl: '', tollgateEnv: options.tollgateEnv };
      const tollgate = await measureC50(pinning, () =>
        startTollgate(ctx, { name: 'sqlite', databaseUrl: url, keys: bulk.sampleKeys }),
      );
      const dbMb = dbSizeMb(file);
      rows.push({
        rows: count,
        keysUsed: bulk.sampleKeys.length,
        insertSeconds: bulk.seconds,
        ...(dbMb === undefined ? {} : { dbMb }),
        tollgate,
      });
    } finally {
      temp.remove();
    }
  }
  return rows;
}

/**
 * A migrated database in `dir` with `accounts` accounts (a key each) and `count` past requests spread over
 * them; how long the bulk inserts took.
 */
async function pastRequests(dir: string, accounts: number, count: number, what: string) {
  const file = join(dir, 'tollgate.db');
  const url = await migrateSqlite(file);
  const bulk = bulkAccounts(file, accounts, { sample: accounts, keepAccounts: true });
  let seconds = bulk.seconds;
  if (count > 0) {
    log(
      `${what}: bulk insert of ${count.toLocaleString('en-US')} past requests (usage rows with their charges)`,
    );
    seconds += bulkUsage(file, count, bulk.accounts, (l) => log(`  ${l}`)).seconds;
  }
  return { file, url, bulk, seconds };
}

async function usageCounts(pinning: Pinning): Promise<DataRow[]> {
  const rows: DataRow[] = [];
  const accounts = options.keys;
  for (const count of levels([0, 1_000_000, 10_000_000], options.maxUsage)) {
    const temp = tempDir('usage');
    try {
      if (!enoughDisk(temp.dir, count * BYTES_PER_PAST_REQUEST, `${count} usage rows`)) continue;
      const { file, url, bulk, seconds } = await pastRequests(temp.dir, accounts, count, 'usage');
      log(`usage ${count.toLocaleString('en-US')}: inserted in ${seconds.toFixed(1)} s; measuring`);
      const ctx: TargetContext = { pinning, dir: temp.dir, pgAdminUrl: '', tollgateEnv: options.tollgateEnv };
      const tollgate = await measureC50(pinning, () =>
        startTollgate(ctx, { name: 'sqlite', databaseUrl: url, keys: bulk.sampleKeys }),
      );
      const dbMb = dbSizeMb(file);
      rows.push({
        rows: count,
        keysUsed: bulk.sampleKeys.length,
        insertSeconds: seconds,
        ...(dbMb === undefined ? {} : { dbMb }),
        tollgate,
      });
    } finally {
      temp.remove();
    }
  }
  return rows;
}

// ── (d) one account's history: GET /api/v1/key ──────────────────────────────

interface SpendRow {
  rows: number;
  insertSeconds: number;
  dbMb?: number;
  /** GET /api/v1/key, one call at a time after a warm-up: median and slowest, ms. */
  keyP50Ms?: number;
  keyMaxMs?: number;
  /** The store summing the account's charges of today and of this month from its usage rows, ms. */
  sumRowsMs: number;
  /** Those sums, today's and this month's, in nanodollars, and the spend GET /key answered (USD). */
  expectedNano: number[];
  answered?: { today: number; month: number } | undefined;
  /** The spend the answer gave equals those sums. */
  spendMatches: boolean;
  /** The dashboard's usage chart of 30 days for the account, back to back: median ms per chart. */
  chartMs?: number;
  /** Chat completions one at a time, alone and while the charts run: median and slowest, ms. */
  apiAlone: Latency;
  apiDuringCharts?: Latency;
}

interface Latency {
  p50Ms?: number;
  maxMs?: number;
}

const KEY_CALLS = 50;
const API_CALLS = 40;
const BENCH_PASSWORD = 'bench-password-of-the-account';

/** Sends one request and times it to its last byte, ms; then hands its body to `read`. Throws unless 200. */
async function timed(send: () => Promise<Response>, read?: (body: string) => void): Promise<number> {
  const started = performance.now();
  const response = await send();
  const body = await response.text();
  if (response.status !== 200) throw new Error(`${response.url} answered ${response.status}`);
  const ms = performance.now() - started;
  read?.(body);
  return ms;
}

/** Requests one at a time, at least `n` and until `more` says enough: median and slowest latency. */
async function sequential(n: number, send: () => Promise<Response>, more = () => false): Promise<Latency> {
  const times: number[] = [];
  while (times.length < n || more()) times.push(await timed(send));
  const p50Ms = median(times);
  return { ...(p50Ms === undefined ? {} : { p50Ms }), maxMs: Math.max(...times) };
}

/** Logs in to the dashboard as the account; the session cookie. */
async function dashboardLogin(base: string, email: string): Promise<string> {
  const response = await fetch(`${base}/dashboard/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password: BENCH_PASSWORD }),
  });
  const cookie = response.headers.get('set-cookie')?.split(';')[0];
  if (response.status !== 200 || !cookie) throw new Error(`dashboard login answered ${response.status}`);
  return cookie;
}

/**
 * Chat completions one at a time while the account's 30-day usage chart is asked for back to back, as a
 * user with the dashboard open would — at least {@link API_CALLS} of them, and until three charts were
 * drawn (two minutes at most) — and the chart's own time (median).
 */
async function apiDuringCharts(
  target: RunningTarget,
  email: string,
): Promise<{ chartMs?: number; latency: Latency }> {
  const base = new URL(target.request.url).origin;
  const cookie = await dashboardLogin(base, email);
  const chart = () => fetch(`${base}/dashboard/api/usage/daily?days=30`, { headers: { cookie } });
  await timed(chart);
  const charts: number[] = [];
  let stop = false;
  const loop = (async () => {
    while (!stop) charts.push(await timed(chart));
  })();
  try {
    // Three charts, or two minutes of them at most (an account far larger than the levels here).
    const until = performance.now() + 120_000;
    const latency = await sequential(
      API_CALLS,
      () => sendChat(target),
      () => charts.length < 3 && performance.now() < until,
    );
    const chartMs = median(charts);
    return { ...(chartMs === undefined ? {} : { chartMs }), latency };
  } finally {
    stop = true;
    await loop;
  }
}

function sendChat(target: RunningTarget): Promise<Response> {
  const { url, method, headers, body } = target.request;
  return fetch(url, { method, headers, body });
}

async function spendHistory(pinning: Pinning): Promise<SpendRow[]> {
  const rows: SpendRow[] = [];
  for (const count of levels([0, 1_000_000, 10_000_000], options.maxUsage)) {
    const temp = tempDir('spend');
    try {
      if (!enoughDisk(temp.dir, count * BYTES_PER_PAST_REQUEST, `${count} usage rows`)) continue;
      const { file, url, bulk, seconds } = await pastRequests(temp.dir, 1, count, 'one account');
      const account = bulk.accounts[0] as (typeof bulk.accounts)[0];
      // Bulk rows bypass the settles that keep the counters: fill them as migration 0008 does. And a
      // password, for the dashboard's login.
      const store = openSqliteStore(url);
      const now = Date.now();
      const { dayStart, monthStart } = spendStarts(now);
      const since = [dayStart, monthStart];
      let email: string;
      try {
        const kysely = store.kysely;
        await fillSpendCounters(kysely as unknown as Kysely<unknown>, now);
        await kysely
          .updateTable('accounts')
          .set({ password_hash: await hashPassword(BENCH_PASSWORD) })
          .where('id', '=', account.id)
          .execute();
        email = (await store.getAccount(account.id))?.email ?? '';
      } finally {
        await store.close();
      }
      log(`one account, ${count.toLocaleString('en-US')} requests: measuring GET /api/v1/key`);
      const ctx: TargetContext = { pinning, dir: temp.dir, pgAdminUrl: '', tollgateEnv: options.tollgateEnv };
      const target = await startTollgate(ctx, { name: 'sqlite', databaseUrl: url, keys: bulk.sampleKeys });
      try {
        const keyUrl = target.request.url.replace(/\/chat\/completions$/, '/key');
        const headers = { authorization: target.request.headers.authorization as string };
        const times: number[] = [];
        let spend: { today: number; month: number } | undefined;
        const readSpend = (body: string) => {
          spend = (JSON.parse(body) as { spend?: { today: number; month: number } }).spend;
        };
        for (let i = 0; i < KEY_CALLS + 5; i++) {
          const ms = await timed(() => fetch(keyUrl, { headers }), readSpend);
          if (i >= 5) times.push(ms);
        }
        times.sort((a, b) => a - b);
        // The sums from the rows, read after the calls to GET /key (the target's probe was a charged request
        // too) and before the chat completions below.
        const reader = await openStore(url);
        let expected: number[];
        let sumRowsMs: number;
        try {
          const started = performance.now();
          expected = await reader.chargesSince(account.id, since);
          sumRowsMs = performance.now() - started;
        } finally {
          await reader.close();
        }
        log(
          `one account, ${count.toLocaleString('en-US')} requests: chat completions with the dashboard open`,
        );
        const apiAlone = await sequential(API_CALLS, () => sendChat(target));
        const during = count > 0 ? await apiDuringCharts(target, email) : undefined;
        const dbMb = dbSizeMb(file);
        const keyP50Ms = median(times);
        const keyMaxMs = times[times.length - 1];
        rows.push({
          rows: count,
          insertSeconds: seconds,
          ...(dbMb === undefined ? {} : { dbMb }),
          ...(keyP50Ms === undefined ? {} : { keyP50Ms }),
          ...(keyMaxMs === undefined ? {} : { keyMaxMs }),
          sumRowsMs,
          expectedNano: expected,
          answered: spend,
          spendMatches:
            spend !== undefined &&
            Math.round(spend.today * 1e9) === expected[0] &&
            Math.round(spend.month * 1e9) === expected[1],
          ...(during?.chartMs === undefined ? {} : { chartMs: during.chartMs }),
          apiAlone,
          ...(during ? { apiDuringCharts: during.latency } : {}),
        });
      } finally {
        await target.stop().catch(() => undefined);
      }
    } finally {
      temp.remove();
    }
  }
  return rows;
}

function dataTable(title: string, what: string, rows: readonly DataRow[]): string {
  const first = rows[0]?.tollgate;
  return `${title}\n${table(
    [what, 'keys used', 'insert s', 'DB MB', 'req/s', '×first', 'CPU µs/req', '×first', 'errors'],
    rows.map((r) => [
      r.rows.toLocaleString('en-US'),
      String(r.keysUsed),
      fmt(r.insertSeconds, 1),
      fmt(r.dbMb),
      fmt(r.tollgate.rps),
      fmt(ratio(r.tollgate.rps, first?.rps), 2),
      fmt(r.tollgate.cpuUsPerReq),
      fmt(ratio(r.tollgate.cpuUsPerReq, first?.cpuUsPerReq), 2),
      errorsCell(r.tollgate),
    ]),
  )}`;
}

async function main(): Promise<void> {
  const pinning = detectPinning(flags.boolean('no-pin'));
  pinSelf(pinning.load);
  compileChildScripts();
  log(`pinning: ${pinning.enabled ? pinning.reason : `off (${pinning.reason})`}`);
  log(`closed loop: ${closedLoop.reason}`);
  log(
    `c${options.connections} ${options.durationSec}s after ${options.warmupSec}s warm-up per level; parts: ${parts.join(', ')}`,
  );

  const prompt = parts.includes('prompt') ? await promptSizes(pinning) : [];
  const accounts = parts.includes('accounts') ? await accountCounts(pinning) : [];
  const usage = parts.includes('usage') ? await usageCounts(pinning) : [];
  const spend = parts.includes('spend') ? await spendHistory(pinning) : [];

  process.stdout.write('\nTollgate scaling — c50, SQLite, billing every call\n\n');
  if (prompt.length > 0) {
    process.stdout.write(
      `${table(
        [
          'prompt',
          'messages',
          'bare req/s',
          'bare CPU µs',
          'Tollgate req/s',
          'CPU µs',
          '×bare req/s',
          '×bare CPU',
          'added CPU µs',
          'added µs/KiB',
          'load CPU %',
          'errors',
        ],
        prompt.map((r) => {
          const added =
            r.tollgate.cpuUsPerReq === undefined || r.bare.cpuUsPerReq === undefined
              ? undefined
              : r.tollgate.cpuUsPerReq - r.bare.cpuUsPerReq;
          return [
            kb(r.bytes),
            String(r.messages),
            fmt(r.bare.rps),
            fmt(r.bare.cpuUsPerReq),
            fmt(r.tollgate.rps),
            fmt(r.tollgate.cpuUsPerReq),
            fmt(ratio(r.tollgate.rps, r.bare.rps), 2),
            fmt(ratio(r.tollgate.cpuUsPerReq, r.bare.cpuUsPerReq), 2),
            fmt(added),
            fmt(added === undefined ? undefined : added / (r.bytes / 1024), 2),
            `${busyCell(r.bare)} / ${busyCell(r.tollgate)}`,
            `${errorsCell(r.bare)} / ${errorsCell(r.tollgate)}`,
          ];
        }),
      )}\n\n`,
    );
  }
  if (accounts.length > 0) {
    process.stdout.write(`${dataTable('Accounts (one key each)', 'accounts', accounts)}\n\n`);
  }
  if (usage.length > 0) {
    process.stdout.write(
      `${dataTable(`Past requests (usage rows with their charges, on ${options.keys} accounts)`, 'usage rows', usage)}\n\n`,
    );
  }
  if (spend.length > 0) {
    process.stdout.write(
      `One account's own history: GET /api/v1/key (today's and this month's spend)\n${table(
        [
          'usage rows',
          'insert s',
          'DB MB',
          'GET /key p50 ms',
          'max ms',
          'summing its rows ms',
          'spend right',
          'chart ms',
          'API p50/max ms',
          'during charts',
        ],
        spend.map((r) => [
          r.rows.toLocaleString('en-US'),
          fmt(r.insertSeconds, 1),
          fmt(r.dbMb),
          fmt(r.keyP50Ms, 2),
          fmt(r.keyMaxMs, 2),
          fmt(r.sumRowsMs, 1),
          r.spendMatches ? 'yes' : 'NO',
          fmt(r.chartMs),
          `${fmt(r.apiAlone.p50Ms, 1)} / ${fmt(r.apiAlone.maxMs, 1)}`,
          r.apiDuringCharts ? `${fmt(r.apiDuringCharts.p50Ms, 1)} / ${fmt(r.apiDuringCharts.maxMs, 1)}` : '—',
        ]),
      )}\n` +
        `GET /key: ${KEY_CALLS} calls one at a time after 5, through HTTP · summing its rows: the store adding up ` +
        "the account's charges of today and of this month from its usage rows, in this process (GET /key summed " +
        'them per call before the spend counters, reading every row of the month into JavaScript) · chart: the ' +
        "dashboard's usage chart of 30 days for that account, asked for back to back · API: " +
        `${API_CALLS} chat completions one at a time, alone and while the charts run\n\n`,
    );
  }
  process.stdout.write(
    'CPU: the gateway process over the measured window per completed request · ×first: against the first row; ' +
      'flat means ≈ 1.00 (±20% is run-to-run noise on a shared machine)\n' +
      'load CPU %: how busy the CPU of the load generator and the upstream simulator (which tokenizes every prompt) ' +
      'was, bare / Tollgate; near 100 the req/s and the timed CPU per request are that CPU’s, not the targets’\n',
  );

  const file = writeResults(
    'scaling-',
    {
      kind: 'tollgate-bench-scaling',
      startedAt: startedAt.toISOString(),
      finishedAt: new Date().toISOString(),
      options: { ...options, parts, generator: closedLoop.reason },
      machine: machineInfo(),
      pinning,
      prompt,
      accounts,
      usage,
      spend,
    },
    startedAt,
  );
  process.stdout.write(`\nJSON: ${file}\n`);
}

main()
  .catch((err: unknown) => {
    process.stderr.write(
      `bench:scaling failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exitCode = 1;
  })
  .finally(() => cleanupAll());
