import { createHook } from 'node:async_hooks';

/**
 * Keeps one of Node's `process.nextTick` records alive for the life of the process, so that every later
 * record is built by V8's fast path.
 *
 * `process.nextTick` builds each record as `{ [async_id_symbol]: …, [trigger_async_id_symbol]: …,
 * callback, args }`. An object literal with computed keys is built property by property; V8 remembers,
 * weakly, the hidden class each property was added to, and compiles that into a fast path. If a full
 * garbage collection finds no record alive, it frees those hidden classes and the remembered ones are
 * cleared; V8 then marks those properties megamorphic for good, and they are added to every later record
 * in the runtime (`Runtime_DefineKeyedOwnPropertyInLiteral`), a slow call each. Whether such a collection
 * happens while nothing is scheduled is a matter of timing at start-up, so some starts of one build pay
 * those calls on every request, a sizeable share of its instructions, and others do not. A record held
 * here keeps the hidden classes alive, so the site stays monomorphic.
 *
 * The record is caught by an `init` hook enabled around one `nextTick` and disabled at once, so no hook
 * stays installed. Call it first thing in the process, before a full collection can find no record alive.
 */
let held: object | undefined;

/** Holds one nextTick record (once per process); returns whether one is held. */
export function holdTickRecordShape(): boolean {
  if (held !== undefined) return true;
  const hook = createHook({
    init(_asyncId, type, _triggerAsyncId, resource) {
      if (type === 'TickObject' && held === undefined) held = resource;
    },
  });
  hook.enable();
  try {
    process.nextTick(noop);
  } finally {
    hook.disable();
  }
  return held !== undefined;
}

function noop(): void {}
