import type { Logger } from 'pino';
import type { Billing } from '../billing/billing.js';
import type { Config } from '../config/index.js';
import type {
  ProviderAdapter,
  ProviderName,
  UpstreamFailureKind,
  UpstreamHttpRequest,
  UpstreamHttpResponse,
  WireFormat,
} from '../providers/types.js';
import type { StreamOptions, UpstreamStreamResult } from '../providers/upstream-stream-call.js';
import type { ProviderRegistry } from '../routing/registry.js';
import type { RotationCounter } from '../routing/rotation.js';
import type { Store } from '../store/types.js';
import type { TokenCounter } from './token-counter.js';
import type { StreamEnding } from './types.js';

/** The network side of an upstream call (`src/providers/upstream-client.ts`). */
export interface UpstreamSender {
  send(
    req: UpstreamHttpRequest,
    opts: { timeoutMs: number; signal?: AbortSignal },
  ): Promise<UpstreamHttpResponse>;
  openStream(req: UpstreamHttpRequest, opts: StreamOptions): Promise<UpstreamStreamResult>;
}

/** How one upstream call ended, for metrics: `ok`, the failure kind, or an error of the gateway's own. */
export type UpstreamOutcome = 'ok' | UpstreamFailureKind | 'internal_error';

/** Optional instrumentation (`src/metrics/`), told each outcome where the pipeline learns it. */
export interface GatewayObserver {
  /** One upstream call ended; every failover attempt is reported on its own. */
  upstreamAttempt(provider: ProviderName, outcome: UpstreamOutcome, seconds: number): void;
  /** A request was settled: the tokens billed and what was charged (meta.cost.total, in nanodollars). */
  charged(provider: ProviderName, promptTokens: number, completionTokens: number, costNano: number): void;
  /** A streamed answer began: its first delta came this long after the upstream call started. */
  streamStarted?(provider: ProviderName, secondsToFirstToken: number): void;
  /** A streamed answer ended, and how. */
  streamEnded?(provider: ProviderName, ending: StreamEnding): void;
}

/** How long an idempotency key's answer is kept (and a different body refused). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

export interface GatewayDeps {
  config: Config;
  idempotency: Pick<Store, 'beginIdempotent' | 'abandonIdempotent'>;
  billing: Billing;
  registry: ProviderRegistry;
  rotation: RotationCounter;
  upstream: UpstreamSender;
  adapterFor: (format: WireFormat) => ProviderAdapter;
  /** Counts tokens off the event loop for answers without usage. */
  tokenCounter: TokenCounter;
  logger: Logger;
  now?: () => number;
  observer?: GatewayObserver;
}

/** How a streamed answer that did not complete is recorded (its usage row's status). */
export interface StreamCut {
  status: 'ok' | 'error';
  errorCode: string | null;
  httpStatus: number;
  /** How the stream ended, and the error the client was sent (kept for an idempotent replay). */
  ending?: 'client_gone' | 'upstream_cut';
  message?: string | undefined;
}
