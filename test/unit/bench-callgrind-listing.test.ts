import { describe, expect, it } from 'vitest';
import { betterSqliteInstructions } from '../../bench/callgrind-listing.js';

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

describe('bench:instructions reads the share spent inside better-sqlite3 from a callgrind listing', () => {
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
