import { GatewayError } from '../errors.js';
import type { ProviderName, UpstreamError } from '../providers/types.js';

/** Maps the last upstream failure of a request to the error the caller sees (docs/errors.md). */
export function toGatewayError(provider: ProviderName, err: UpstreamError): GatewayError {
  const retryAfterSeconds =
    err.retryAfterMs === undefined ? undefined : Math.max(1, Math.ceil(err.retryAfterMs / 1000));
  switch (err.kind) {
    case 'timeout':
      return new GatewayError('provider_timeout', `Provider "${provider}" did not answer in time.`);
    case 'rejected':
      return new GatewayError(
        'upstream_rejected',
        `Provider "${provider}" rejected the request: ${err.message}`,
      );
    case 'rate_limited':
      return new GatewayError(
        'provider_unavailable',
        `Provider "${provider}" is rate limiting requests; try again later.`,
        { retryAfterSeconds: retryAfterSeconds ?? 1 },
      );
    case 'auth':
      return new GatewayError(
        'provider_error',
        `Provider "${provider}" is misconfigured (it refused the gateway's credentials, model or address); the operator needs to check its configuration.`,
        { shouldRetry: false },
      );
    case 'connect':
      return new GatewayError('provider_error', `Provider "${provider}" could not be reached.`);
    case 'server_error':
      return new GatewayError(
        'provider_error',
        `Provider "${provider}" failed with an error${err.status ? ` (upstream status ${err.status})` : ''}.`,
      );
    case 'bad_response':
      return new GatewayError('provider_error', `Provider "${provider}" returned an unreadable response.`);
  }
}
