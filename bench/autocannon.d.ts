/**
 * The part of autocannon's programmatic API the load generator uses (autocannon ships no types).
 * @see https://github.com/mcollina/autocannon#api
 */
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  interface RequestParams {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
  }

  interface Options {
    url: string;
    method?: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
    connections?: number;
    pipelining?: number;
    /** Seconds. */
    duration?: number;
    /** Seconds before a request counts as a timeout. */
    timeout?: number;
    requests?: { setupRequest?: (request: RequestParams) => RequestParams }[];
  }

  interface Result {
    errors: number;
    timeouts: number;
    non2xx: number;
    requests: { average: number; total: number };
  }

  interface Instance extends EventEmitter, PromiseLike<Result> {
    stop(): void;
  }

  function autocannon(options: Options): Instance;
  export default autocannon;
}
