import { UpstreamError, type UpstreamFailureKind } from './types.js';
import {
  cleanUpstreamMessage,
  type ErrorBodyReader,
  failureKindForStatus,
} from './upstream-failure-from-status.js';

/**
 * The `UpstreamError` for an error an upstream reports inside a stream it began with a 2xx status (an
 * OpenAI-compatible `data: {"error": …}`, Anthropic's `error` event, a Gemini chunk with `error`). The
 * kind is the one of the HTTP status the error stands for (`reader.statusOf`: a rate limit is
 * `rate_limited`, a refusal `rejected`, a bad key `auth`), the way a non-2xx answer is classified; an
 * error that names no status is the upstream failing mid-answer, `server_error`. The message is the
 * upstream's own, cleaned as for a non-2xx answer (`secret` removed).
 *
 * @see https://docs.anthropic.com/en/docs/build-with-claude/streaming#error-events
 */
export function streamedFailure(
  body: unknown,
  reader: ErrorBodyReader,
  secret: string | undefined,
): UpstreamError {
  const status = reader.statusOf?.(body);
  let kind: UpstreamFailureKind =
    status !== undefined && status >= 400 && status <= 599 ? failureKindForStatus(status) : 'server_error';
  if (kind === 'rejected' && reader.isCredentialError?.(body) === true) kind = 'auth';
  const extracted = reader.extractMessage(body);
  const upstreamMessage = extracted === undefined ? undefined : cleanUpstreamMessage(extracted, secret);
  const message =
    kind === 'rejected'
      ? (upstreamMessage ?? 'upstream rejected the request in its stream')
      : `upstream reported an error in its stream${upstreamMessage === undefined ? '' : `: ${upstreamMessage}`}`;
  return new UpstreamError(kind, message);
}

/**
 * The body of an event named `error`: its data as JSON, or, when it is not JSON, its text as the
 * message (an error event is a failure even when its data cannot be read).
 */
export function errorEventBody(data: string): unknown {
  try {
    return JSON.parse(data) as unknown;
  } catch {
    return { error: { message: data } };
  }
}
