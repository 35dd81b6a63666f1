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
  /**
   * A normal answer that reports these usage numbers. `cacheReadTokens` and `cacheWriteTokens` are parts
   * of `promptTokens`, each format reporting them its own way (a format without cache writes leaves them
   * out); `deepseek`: the OpenAI format reports the cache as DeepSeek does (`prompt_cache_hit_tokens` and
   * `prompt_cache_miss_tokens`, no `prompt_tokens_details`).
   */
  | {
      kind: 'usage';
      promptTokens: number;
      completionTokens: number;
      cacheReadTokens?: number;
      cacheWriteTokens?: number;
      deepseek?: boolean;
      times?: number;
    }
  /** A normal answer after `delayMs`. */
  | { kind: 'slow'; delayMs: number; times?: number }
  /**
   * Streams only (a request that does not stream passes it by, uncounted): after `afterChunks` content
   * pieces the socket is destroyed, without the stream's ending events.
   */
  | { kind: 'cut'; afterChunks: number; times?: number }
  /** Streams only: after `afterChunks` content pieces nothing more is sent until the client closes. */
  | { kind: 'stall'; afterChunks: number; times?: number }
  /**
   * Streams only: after `afterChunks` content pieces, the format's mid-stream error (an OpenAI `data:
   * {"error":…}`, an Anthropic `event: error`, Gemini's bare JSON error) ends the stream. `status` picks
   * the error's type (default: 500 OpenAI, 529 `overloaded_error` Anthropic, 503 `UNAVAILABLE` Gemini).
   */
  | { kind: 'stream_error'; afterChunks: number; status?: number; message?: string; times?: number };

/** One request received for a provider slug. */
export interface SimRequest {
  /** The URL path without the query string. */
  path: string;
  /** Request headers, names lower-cased. */
  headers: Record<string, string | undefined>;
  /** The parsed JSON body, or the raw string when it is not JSON. */
  body: unknown;
  /** Whether it asked for a stream (`"stream": true`, Gemini's `:streamGenerateContent`). */
  stream: boolean;
}

/**
 * How a streamed answer is cut up and paced. A content piece is one text / thinking / arguments delta
 * (with `n` > 1, one per choice, sent together); every streamed string is split into about `chunks`
 * pieces (at most one per character), tool-call arguments included; a Gemini function call is one piece.
 */
export interface StreamSettings {
  /** Pieces each streamed string is split into (>= 1). Default 12. */
  chunks: number;
  /**
   * Content pieces per second (fractions allowed); 0 = as fast as the client reads. Default 0, so that
   * the tests do not wait; `tollgate demo` or the benchmark set a pace.
   */
  chunksPerSecond: number;
}

/** How one streamed answer went, for the tests' assertions. Times are epoch milliseconds. */
export interface SimStream {
  /** The URL path of the request. */
  path: string;
  /** When the simulator started it (after the latency): the 200 and the first events. */
  startedAt: number;
  /** Content pieces of the whole answer. */
  piecesPlanned: number;
  /** Content pieces handed to the socket (what the simulator "billed" if it ended early). */
  piecesSent: number;
  /**
   * `open`: being written; `stalled`: a `stall` fault holds it; `complete`: every event sent;
   * `client_closed`: the client closed the connection before the end; `cut` / `error_event`: ended by
   * that fault; `shutdown`: `close()` ended it.
   */
  outcome: 'open' | 'stalled' | 'complete' | 'client_closed' | 'cut' | 'error_event' | 'shutdown';
  /** When the simulator saw the client close the connection before the stream ended, else null. */
  closedEarlyAt: number | null;
  /** When it ended, however it ended; null while open or stalled. */
  endedAt: number | null;
}

export interface Simulator {
  /** e.g. `http://127.0.0.1:41234` */
  url: string;
  /** The base URL a provider of `format` named `slug` is configured with. */
  baseUrl(format: WireFormat, slug: string): string;
  setFault(slug: string, fault: SimFault | null): void;
  /** Delay (ms) before every normal answer (before a stream's first event). */
  setLatency(ms: number): void;
  /** Changes the given stream settings. */
  setStream(settings: Partial<StreamSettings>): void;
  streamSettings(): StreamSettings;
  /** Filler words of the usual reply (default 40), streamed or not: longer answers for longer streams. */
  setReplyWords(words: number): void;
  /** Every request received for that slug, oldest first. */
  requests(slug: string): SimRequest[];
  /** Every stream answered for that slug, oldest first (copies, as they are now). */
  streams(slug: string): SimStream[];
  /** Clears faults, recorded requests and streams; latency and the settings back to their start values. */
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
  /** Default 12 (see `StreamSettings`). */
  streamChunks?: number;
  /** Default 0: as fast as the client reads. */
  streamChunksPerSecond?: number;
  /** Default 40. */
  replyWords?: number;
}
