import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseFault } from './faults.js';
import { parseJson, readBody, sendJson } from './http.js';
import type { SimFault, SimRequest, SimStream, StreamSettings } from './types.js';

/** What the control API drives. */
export interface ControlTarget {
  setFault(slug: string, fault: SimFault | null): void;
  setLatency(ms: number): void;
  setStream(settings: Partial<StreamSettings>): void;
  streamSettings(): StreamSettings;
  setReplyWords(words: number): void;
  requests(slug: string): SimRequest[];
  streams(slug: string): SimStream[];
  reset(): void;
}

/** Bounds of the settings (a typo should not make the simulator write a gigabyte). */
export const MAX_STREAM_CHUNKS = 100_000;
export const MAX_REPLY_WORDS = 100_000;

function isIntIn(value: unknown, min: number, max: number): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max;
}

/** `{chunks?, chunksPerSecond?}` checked (one at least), or why not. */
export function parseStreamSettings(body: unknown): Partial<StreamSettings> | string {
  if (!isRecord(body)) return 'stream settings must be an object {chunks?, chunksPerSecond?}';
  const { chunks, chunksPerSecond: pace } = body;
  if (chunks === undefined && pace === undefined) return 'stream settings need chunks or chunksPerSecond';
  if (chunks !== undefined && !isIntIn(chunks, 1, MAX_STREAM_CHUNKS)) {
    return `stream chunks must be an integer 1–${MAX_STREAM_CHUNKS}`;
  }
  if (pace !== undefined && (typeof pace !== 'number' || !Number.isFinite(pace) || pace < 0)) {
    return 'stream chunksPerSecond must be a number >= 0 (0: as fast as the client reads)';
  }
  return {
    ...(chunks === undefined ? {} : { chunks }),
    ...(pace === undefined ? {} : { chunksPerSecond: pace }),
  };
}

export function isReplyWords(value: unknown): value is number {
  return isIntIn(value, 1, MAX_REPLY_WORDS);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The control API, JSON in and out, for a simulator running in another process:
 * `POST /__sim/fault {slug, fault|null}`, `POST /__sim/latency {ms}`,
 * `POST /__sim/stream {chunks?, chunksPerSecond?}` (→ the settings now), `GET /__sim/stream`,
 * `POST /__sim/reply {words}`, `GET /__sim/requests?slug=x` (→ `{requests}`),
 * `GET /__sim/streams?slug=x` (→ `{streams}`, see `SimStream`), `POST /__sim/reset`,
 * `GET /__sim/health` (→ `{ok: true}`).
 */
export async function handleControl(
  target: ControlTarget,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): Promise<void> {
  const result = await readBody(req);
  const body = result.tooLarge ? null : parseJson(result.raw);
  const route = `${req.method ?? 'GET'} ${url.pathname}`;
  const bad = (message: string) => sendJson(res, 400, { error: { message } });
  switch (route) {
    case 'GET /__sim/health':
      return sendJson(res, 200, { ok: true });
    case 'POST /__sim/fault': {
      if (!isRecord(body) || typeof body.slug !== 'string' || body.slug.length === 0) {
        return bad('body must be {slug, fault}');
      }
      const fault = parseFault(body.fault ?? null);
      if (typeof fault === 'string') return bad(fault);
      target.setFault(body.slug, fault);
      return sendJson(res, 200, { ok: true });
    }
    case 'POST /__sim/latency': {
      if (!isRecord(body) || typeof body.ms !== 'number' || !Number.isFinite(body.ms) || body.ms < 0) {
        return bad('body must be {ms} with ms >= 0');
      }
      target.setLatency(body.ms);
      return sendJson(res, 200, { ok: true });
    }
    case 'POST /__sim/stream': {
      const settings = parseStreamSettings(body);
      if (typeof settings === 'string') return bad(settings);
      target.setStream(settings);
      return sendJson(res, 200, target.streamSettings());
    }
    case 'GET /__sim/stream':
      return sendJson(res, 200, target.streamSettings());
    case 'POST /__sim/reply': {
      if (!isRecord(body) || !isReplyWords(body.words)) {
        return bad(`body must be {words} with words an integer 1–${MAX_REPLY_WORDS}`);
      }
      target.setReplyWords(body.words);
      return sendJson(res, 200, { ok: true });
    }
    case 'GET /__sim/requests': {
      const slug = url.searchParams.get('slug');
      if (!slug) return bad('query parameter slug is required');
      return sendJson(res, 200, { requests: target.requests(slug) });
    }
    case 'GET /__sim/streams': {
      const slug = url.searchParams.get('slug');
      if (!slug) return bad('query parameter slug is required');
      return sendJson(res, 200, { streams: target.streams(slug) });
    }
    case 'POST /__sim/reset':
      target.reset();
      return sendJson(res, 200, { ok: true });
    default:
      return sendJson(res, 404, { error: { message: `no control route ${route}` } });
  }
}
