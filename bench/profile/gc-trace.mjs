/**
 * Preloaded into the measured process by `npm run bench:profile -- --mode gc` (`node --import`): V8
 * writes one line of `name=value` figures per garbage collection to stdout (`--trace-gc-nvp`), stamped in
 * milliseconds since the isolate started. This line gives the harness the process's time origin, so that
 * it can place every collection in the phase of load it happened in.
 */
import { setFlagsFromString } from 'node:v8';

setFlagsFromString('--trace-gc-nvp');
process.stdout.write(`gc-trace origin ${performance.timeOrigin}\n`);
