import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseFault } from './faults.js';
import { parseJson, readBody, sendJson } from './http.js';
import type { SimFault, SimRequest } from './types.js';

/** What the control API drives. */
export interface ControlTarget {
  setFault(slug: string, fault: SimFault | null): void;
  setLatency(ms: number): void;
  requests(slug: string): SimRequest[];
  reset(): void;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The control API, JSON in and out, for a simulator running in another process:
 * `POST /__sim/fault {slug, fault|null}`, `POST /__sim/latency {ms}`, `GET /__sim/requests?slug=x`
 * (→ `{requests}`), `POST /__sim/reset`, `GET /__sim/health` (→ `{ok: true}`).
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
    case 'GET /__sim/requests': {
      const slug = url.searchParams.get('slug');
      if (!slug) return bad('query parameter slug is required');
      return sendJson(res, 200, { requests: target.requests(slug) });
    }
    case 'POST /__sim/reset':
      target.reset();
      return sendJson(res, 200, { ok: true });
    default:
      return sendJson(res, 404, { error: { message: `no control route ${route}` } });
  }
}
