import type { UpstreamWait } from '../gateway/types.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The request's overhead stopwatch, started by the app's first hook (src/http/app.ts). */
    overhead: Overhead | undefined;
  }
}

/** The response header that carries the request's overhead, in milliseconds (docs/api.md). */
export const OVERHEAD_HEADER = 'x-tollgate-overhead-ms';

/**
 * Time spent inside Tollgate on one request: from its arrival (the first hook) to its response headers,
 * less the time the gateway waited on upstreams (`upstreamMs`, added per attempt by `gateway/call.ts`:
 * a plain answer until it is read, a stream until its first delta). A streamed answer's headers go out
 * with its first delta, so its overhead ends there.
 */
export class Overhead implements UpstreamWait {
  private readonly arrived = performance.now();
  upstreamMs = 0;

  /** The header's value: milliseconds with two decimals, never negative. */
  header(): string {
    const ms = performance.now() - this.arrived - this.upstreamMs;
    return ms > 0 ? ms.toFixed(2) : '0.00';
  }
}
