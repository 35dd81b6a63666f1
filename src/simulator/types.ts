/** The three upstream wire formats the simulator speaks (mirrors the gateway's own type, redefined here). */
export type WireFormat = 'openai-compatible' | 'anthropic' | 'gemini';

/**
 * A fault injected for one provider slug. `times`: the fault applies to that many following requests of the
 * slug (those that pass authentication and validation), then is cleared; absent = until changed.
 */
export type SimFault =
  /** Accept the request and never answer (until `close()`). */
  | { kind: 'hang'; times?: number }
  /** Send 200 headers and a partial JSON body, then destroy the socket. */
  | { kind: 'reset'; times?: number }
  /** An error in the format's own error shape; `retryAfter` (seconds) becomes a `Retry-After` header. */
  | { kind: 'status'; status: number; message?: string; retryAfter?: number; times?: number }
  /** 200 with `content-type: application/json` and a body that is not JSON. */
  | { kind: 'garbage'; times?: number }
  /** 200 with the body `null`. */
  | { kind: 'null'; times?: number }
  /** 200 with valid JSON that has no choices / content / candidates. */
  | { kind: 'no_choices'; times?: number }
  /** A normal answer without any usage field. */
  | { kind: 'no_usage'; times?: number }
  /** A normal answer that reports these usage numbers. */
  | { kind: 'usage'; promptTokens: number; completionTokens: number; times?: number }
  /** A normal answer after `delayMs`. */
  | { kind: 'slow'; delayMs: number; times?: number };

/** One request received for a provider slug. */
export interface SimRequest {
  /** The URL path without the query string. */
  path: string;
  /** Request headers, names lower-cased. */
  headers: Record<string, string | undefined>;
  /** The parsed JSON body, or the raw string when it is not JSON. */
  body: unknown;
}

export interface Simulator {
  /** e.g. `http://127.0.0.1:41234` */
  url: string;
  /** The base URL a provider of `format` named `slug` is configured with. */
  baseUrl(format: WireFormat, slug: string): string;
  setFault(slug: string, fault: SimFault | null): void;
  /** Delay (ms) before every normal answer. */
  setLatency(ms: number): void;
  /** Every request received for that slug, oldest first. */
  requests(slug: string): SimRequest[];
  /** Clears faults and recorded requests; latency back to the start value. */
  reset(): void;
  /** Stops the server; destroys open sockets (including hung requests). */
  close(): Promise<void>;
}

export interface SimulatorOptions {
  /** Default `127.0.0.1`. */
  host?: string;
  /** Default 0 (ephemeral). */
  port?: number;
  /** Default 0: delay before every normal answer. */
  latencyMs?: number;
}
