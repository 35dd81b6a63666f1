/**
 * Preloaded into the profiled server by `npm run bench:profile -- --mode cpu` (`node --import`): V8's CPU
 * profiler (`TOLLGATE_PROFILE=cpu`) or its sampling heap profiler (`heap`) on the main thread, started on
 * the first SIGUSR2 (after the warm-up) and written to `TOLLGATE_PROFILE_FILE` on the second.
 *
 * The heap profile keeps the objects that die young as well (most of a request's allocations). It says
 * where the bytes are allocated, not which of them reach the old generation: asked to leave out the
 * objects collected by scavenges, V8's sampler also drops the samples of the objects that survive them.
 * `--mode gc` gives V8's own count of promoted bytes.
 */
import { renameSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

const kind = process.env.TOLLGATE_PROFILE;
const out = process.env.TOLLGATE_PROFILE_FILE;
if ((kind !== 'cpu' && kind !== 'heap') || !out) {
  throw new Error('the profile sampler needs TOLLGATE_PROFILE (cpu or heap) and TOLLGATE_PROFILE_FILE');
}
const [domain, start, stop, options] =
  kind === 'cpu'
    ? ['Profiler', 'start', 'stop', {}]
    : [
        'HeapProfiler',
        'startSampling',
        'stopSampling',
        {
          samplingInterval: 1024,
          includeObjectsCollectedByMinorGC: true,
          includeObjectsCollectedByMajorGC: true,
        },
      ];
const session = new Session();
session.connect();
let sampling = false;
process.on('SIGUSR2', () => {
  if (!sampling) {
    sampling = true;
    session.post(`${domain}.enable`);
    session.post(`${domain}.${start}`, options);
    return;
  }
  // A session on the main thread answers synchronously. The file appears whole: the harness waits for it.
  session.post(`${domain}.${stop}`, (error, result) => {
    if (error) throw error;
    writeFileSync(`${out}.part`, JSON.stringify(result.profile));
    renameSync(`${out}.part`, out);
  });
});
