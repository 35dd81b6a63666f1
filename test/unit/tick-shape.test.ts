import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');

/**
 * In a fresh node (V8's natives syntax and `gc` exposed): schedule enough nextTicks for V8 to record its
 * feedback, collect garbage twice with none of them alive, schedule a few more, and print the states of
 * the feedback slots of the record literal in `process.nextTick` (`%DebugPrint` of the function).
 */
function literalSlotStates(hold: boolean): string[] {
  const script = `
    ${hold ? "const { holdTickRecordShape } = await import('./src/runtime/tick-shape.ts'); if (!holdTickRecordShape()) throw new Error('no record held');" : ''}
    const pause = () => new Promise((r) => setTimeout(r, 20));
    for (let i = 0; i < 2000; i++) process.nextTick(() => {});
    await pause();
    globalThis.gc();
    globalThis.gc();
    await pause();
    for (let i = 0; i < 10; i++) process.nextTick(() => {});
    await pause();
    new Function('f', '%DebugPrint(f)')(process.nextTick);
  `;
  // V8 prints through C's stdio: into a file, as a pipe (non-blocking for node) may drop what does not fit.
  const dir = mkdtempSync(join(tmpdir(), 'tick-shape-'));
  const fd = openSync(join(dir, 'out'), 'w');
  let out: string;
  try {
    execFileSync(
      process.execPath,
      ['--allow-natives-syntax', '--expose-gc', '--import', 'tsx', '--input-type=module', '-e', script],
      { cwd: ROOT, stdio: ['ignore', fd, 'inherit'] },
    );
    out = readFileSync(join(dir, 'out'), 'utf8');
  } finally {
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  }
  return [...out.matchAll(/slot #\d+ DefineKeyedOwnPropertyInLiteral (\w+)/g)].map((m) => m[1] as string);
}

/** The Node line the project is built and measured on (CI's); the loss below is checked there. */
const NODE_MAJOR = Number(process.versions.node.split('.')[0]);

describe('the nextTick record shape held at start (src/runtime/tick-shape.ts)', () => {
  it.runIf(NODE_MAJOR === 20)(
    'on Node 20, without it, a full collection with no record alive leaves the record literal megamorphic',
    () => {
      const states = literalSlotStates(false);
      expect(states).toHaveLength(4);
      // Should this fail after a Node 20 update, V8 no longer loses the feedback and the hold can go.
      expect(states).toContain('MEGAMORPHIC');
    },
  );

  it('with it, every property of the record literal keeps its monomorphic fast path', () => {
    const states = literalSlotStates(true);
    // The record has four properties on Node 20 and five on later lines; each must stay monomorphic.
    expect(states.length).toBeGreaterThanOrEqual(4);
    expect(new Set(states)).toEqual(new Set(['MONOMORPHIC']));
  });
});
