/**
 * Preloaded into the profiled server by `npm run bench:profile -- --heap` (`node --import`): V8's sampling
 * heap profiler, keeping the objects that die young as well (most of a request's allocations), started on
 * the first SIGUSR2 (after the warm-up) and written to `TOLLGATE_HEAP_PROFILE` on the second.
 *
 * It says where the bytes are allocated, not which of them reach the old generation: asked to leave out
 * the objects collected by scavenges, V8's sampler also drops the samples of objects that survive them
 * (docs/performance.md, twenty-fourth round). `npm run bench:gc` gives V8's own count of promoted bytes.
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
      includeObjectsCollectedByMinorGC: true,
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
