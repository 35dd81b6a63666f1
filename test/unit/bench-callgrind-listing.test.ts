import { describe, expect, it } from 'vitest';
import {
  betterSqliteInstructions,
  parsePerfMap,
  selfCountsByFunction,
} from '../../bench/profile/callgrind-listing.js';

const ADDON = '[/srv/tollgate/node_modules/better-sqlite3/build/Release/better_sqlite3.node]';

/** Lines as `callgrind_annotate --inclusive=yes` prints them (counts with thousands separators). */
const LISTING = [
  '--------------------------------------------------------------------------------',
  'Ir                     file:function',
  '--------------------------------------------------------------------------------',
  '1,506,978,362 (100.0%)  /home/iojs/build/ws/out/../deps/uv/src/unix/core.c:uv_run [/usr/bin/node]',
  `  355,277,495 (23.58%)  ???:Statement::JS_run(v8::FunctionCallbackInfo<v8::Value> const&) ${ADDON}`,
  `  237,318,884 (15.75%)  ???:sqlite3_step ${ADDON}`,
  `   38,815,233 ( 2.58%)  ???:Statement::JS_get(v8::FunctionCallbackInfo<v8::Value> const&) ${ADDON}`,
  `    1,039,384 ( 0.07%)  ???:Statement::JS_all(v8::FunctionCallbackInfo<v8::Value> const&) ${ADDON}`,
  `      186,760 ( 0.01%)  ???:Database::JS_inTransaction(v8::Local<v8::Name>, v8::PropertyCallbackInfo<v8::Value> const&) ${ADDON}`,
  `       82,832 ( 0.01%)  ???:Database::JS_prepare(v8::FunctionCallbackInfo<v8::Value> const&) ${ADDON}`,
  `       79,274 ( 0.01%)  ???:Statement::JS_new(v8::FunctionCallbackInfo<v8::Value> const&) ${ADDON}`,
  `        5,000 ( 0.00%)  ???:StatementIterator::JS_next(v8::FunctionCallbackInfo<v8::Value> const&) ${ADDON}`,
  '   42,307,842 ( 2.81%)  ???:v8::String::Utf8Value::Utf8Value(v8::Isolate*, v8::Local<v8::Value>) [/usr/bin/node]',
  '       12,345 ( 0.00%)  ???:Statement::JS_run(v8::FunctionCallbackInfo<v8::Value> const&) [/usr/lib/other.node]',
].join('\n');

describe('bench:profile --mode instructions reads the share spent inside better-sqlite3 from a callgrind listing', () => {
  it('sums the inclusive counts of the addon entry points, leaving out constructors and other objects', () => {
    expect(betterSqliteInstructions(LISTING)).toBe(
      355_277_495 + 38_815_233 + 1_039_384 + 186_760 + 82_832 + 5_000,
    );
  });

  it('is undefined for a process that never entered the addon', () => {
    expect(betterSqliteInstructions(LISTING.split('\n').slice(0, 4).join('\n'))).toBeUndefined();
    expect(betterSqliteInstructions('')).toBeUndefined();
  });
});

describe('bench:profile --mode instructions --functions names JIT code from V8 perf map', () => {
  // Three pieces of code; the address 0x2000 was reused: its later line is the code there now.
  const MAP = [
    '1000 100 JS:*serve file:///srv/tollgate/dist/gateway/gateway.js:85:16',
    '2000 80 JS:^writeH1 /srv/tollgate/node_modules/undici/lib/dispatcher/client-h1.js:1144:18',
    '3000 40 Builtin:ArrayMap',
    '2000 80 JS:*writeH1 /srv/tollgate/node_modules/undici/lib/dispatcher/client-h1.js:1144:18',
    'not a map line',
  ].join('\n');
  const LISTING_SELF = [
    '1,000,000 (100.0%)  PROGRAM TOTALS',
    '  300,000 (30.00%)  ???:0x0000000000001010 [???]',
    '  200,000 (20.00%)  ???:0x00000000000010f0 [???]',
    '  150,000 (15.00%)  ???:0x0000000000002004 [???]',
    '  100,000 (10.00%)  ???:Builtins_LoadIC [/usr/bin/node]',
    '   50,000 ( 5.00%)  ???:0x0000000000001100 [???]',
    '   25,000 ( 2.50%)  ???:0x0000000000003027 [???]',
  ].join('\n');

  it('reads the map sorted by address, keeping the order of its lines', () => {
    const map = parsePerfMap(MAP);
    expect(map.map((e) => [e.start, e.size, e.order])).toEqual([
      [0x1000, 0x100, 0],
      [0x2000, 0x80, 1],
      [0x2000, 0x80, 3],
      [0x3000, 0x40, 2],
    ]);
  });

  it('adds up the self counts by function, the latest code at a reused address, native names as they are', () => {
    const counts = selfCountsByFunction(LISTING_SELF, parsePerfMap(MAP));
    expect(Object.fromEntries(counts)).toEqual({
      'JS:*serve file:///srv/tollgate/dist/gateway/gateway.js:85:16': 500_000,
      'JS:*writeH1 /srv/tollgate/node_modules/undici/lib/dispatcher/client-h1.js:1144:18': 150_000,
      '???:Builtins_LoadIC [/usr/bin/node]': 100_000,
      '(JIT code not in the perf map)': 50_000,
      'Builtin:ArrayMap': 25_000,
    });
  });
});
