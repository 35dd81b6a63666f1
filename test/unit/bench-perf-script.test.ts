import { describe, expect, it } from 'vitest';
import { jsOwner, NO_JS, parsePerfScript, samplesByOwner } from '../../bench/profile/perf-script.js';

// `perf script -F tid,ip,sym` of three samples, as perf prints them (tab-indented frames, innermost first).
const SCRIPT = [
  '10218 ',
  '\tffffffff822010c9 _raw_spin_unlock_irqrestore',
  '\t7f3a0c1d2e3f sqlite3VdbeExec',
  '\t7f3a0c1d2e40 Statement::JS_run(v8::FunctionCallbackInfo<v8::Value> const&)',
  '\t3a0c1d2e41 JS:*settleInTx file:///srv/tollgate/dist/store/sqlite-hot-path.js:190:15',
  '\t3a0c1d2e42 JS:*flush file:///srv/tollgate/dist/store/sqlite-hot-path.js:114:13',
  '\t55d0 uv_run',
  '',
  ' 9355 ',
  '\t3a0c1d2e50 Builtins_KeyedLoadIC_Megamorphic',
  '\t3a0c1d2e51 JS:*emit node:events:471:44',
  '\t3a0c1d2e52 JS:*routeHandler /srv/tollgate/node_modules/fastify/lib/route.js:465:25',
  '',
  '10230 ',
  '\t55d1 v8::internal::ConcurrentMarking::RunMajor',
  '\t55d2 [unknown]',
  '',
].join('\n');

describe('perf script attribution (bench:profile --mode perf)', () => {
  it('reads each sample with its thread and its frames, innermost first', () => {
    const samples = parsePerfScript(SCRIPT);
    expect(samples).toHaveLength(3);
    expect(samples[0]).toMatchObject({ tid: '10218' });
    expect(samples[0]?.frames[0]).toBe('_raw_spin_unlock_irqrestore');
    expect(samples[0]?.frames).toHaveLength(6);
    expect(samples[1]?.tid).toBe('9355');
    expect(samples[2]?.frames).toEqual(['v8::internal::ConcurrentMarking::RunMajor', '[unknown]']);
  });

  it('names the owner of a JavaScript frame: a Tollgate module, a package, a Node module, WebAssembly', () => {
    expect(
      jsOwner('JS:*chatCompletionJson file:///srv/tollgate/dist/api/chat-completion-body.js:35:35'),
    ).toBe('Tollgate src/api');
    expect(jsOwner('JS:* file:///srv/tollgate/dist/bench/bare-proxy.js:60:30')).toBe(
      'the benchmark script (bench/)',
    );
    expect(jsOwner('JS:^setToLookup /srv/tollgate/node_modules/ret/dist/sets-lookup.js:39:21')).toBe('ret');
    expect(jsOwner('JS:*x /srv/tollgate/node_modules/@fastify/ajv-compiler/index.js:1:1')).toBe(
      '@fastify/ajv-compiler',
    );
    expect(jsOwner('JS:*Readable.read node:internal/streams/readable:647:35')).toBe(
      'node:internal/streams/readable',
    );
    expect(jsOwner('JS:*end node:_http_outgoing:1034:45')).toBe('node:_http_outgoing');
    expect(jsOwner('JS:wasm-function[20]-20-turbofan')).toBe("WebAssembly (undici's llhttp)");
    expect(jsOwner('JS:^ [worker eval]:8:27')).toBe('Tollgate src/store (WAL checkpoint thread)');
    expect(jsOwner('JS:*validate20 :3:89')).toBe('ajv (compiled validators)');
    expect(jsOwner('JS:*anonymous')).toBe('JavaScript the perf map does not name');
    expect(jsOwner('sqlite3VdbeExec')).toBeUndefined();
    expect(jsOwner('Builtins_LoadIC')).toBeUndefined();
  });

  it('counts each sample once, for its innermost JavaScript frame, or as having none', () => {
    const counts = samplesByOwner(parsePerfScript(SCRIPT));
    // The first sample's kernel and SQLite frames count for the store that called them, not for `flush`'s
    // caller or the event loop; the second's builtin for Node's events, not for Fastify further out.
    expect(Object.fromEntries(counts)).toEqual({
      'Tollgate src/store': 1,
      'node:events': 1,
      [NO_JS]: 1,
    });
  });
});
