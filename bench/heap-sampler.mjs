/**
 * Preloaded into the profiled server by `npm run bench:profile -- --heap` (`node --import`): V8's sampling
 * heap profiler, keeping the objects that die young as well (most of a request's allocations), started on
 * the first SIGUSR2 (after the warm-up) and written to `TOLLGATE_HEAP_PROFILE` on the second. With
 * `TOLLGATE_HEAP_PROMOTED=1` (`--promoted`) the objects that die young are left out: what remains is what
 * survived long enough to reach the old generation (and what is still alive), the objects that make the
 * mark-compacts come.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

const out = process.env.TOLLGATE_HEAP_PROFILE;
if (!out) throw new Error('TOLLGATE_HEAP_PROFILE is not set');
const session = new Session();
session.connect();
let sampling = false;
process.on('SIGUSR2', () => {
  if (!sampling) {
    sampling = true;
    session.post('HeapProfiler.enable');
    session.post('HeapProfiler.startSampling', {
      samplingInterval: 1024,
      includeObjectsCollectedByMinorGC: process.env.TOLLGATE_HEAP_PROMOTED !== '1',
      includeObjectsCollectedByMajorGC: true,
    });
    return;
  }
  // A session on the main thread answers synchronously.
  session.post('HeapProfiler.stopSampling', (error, result) => {
    if (error) throw error;
    writeFileSync(out, JSON.stringify(result.profile));
  });
});
