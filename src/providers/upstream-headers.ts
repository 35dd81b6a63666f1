import type { UpstreamHttpResponse } from './types.js';

/** Response headers as undici reads them: name, value, name, value… (HTTP/1.1: Buffers; HTTP/2: strings). */
export type RawHeaders = readonly (Buffer | string)[];

/** The headers of an answer not yet received. */
export const NO_HEADERS: RawHeaders = Object.freeze([]);

/** The value of the first header called `lowerName` (given in lower case), or undefined. */
export function headerValue(raw: RawHeaders, lowerName: string): string | undefined {
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] as Buffer | string;
    if (name.length === lowerName.length && latin1(name).toLowerCase() === lowerName) {
      return latin1(raw[i + 1] as Buffer | string);
    }
  }
  return undefined;
}

/**
 * An answer as the adapters read it. Its headers are only read when the call failed (Retry-After), so they
 * are put in `UpstreamHttpResponse`'s form (one string per name) when first read, not on every answer.
 */
export class ReceivedResponse implements UpstreamHttpResponse {
  private normalized: Record<string, string | undefined> | undefined;

  constructor(
    readonly status: number,
    private readonly received: RawHeaders,
    readonly bodyText: string,
  ) {}

  get headers(): Record<string, string | undefined> {
    this.normalized ??= normalizeHeaders(this.received);
    return this.normalized;
  }
}

/**
 * Header names in lower case, a repeated header's values joined with ", ", as text the way undici decodes
 * headers (Latin-1: one character per byte).
 */
export function normalizeHeaders(raw: RawHeaders): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = Object.create(null);
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = latin1(raw[i] as Buffer | string).toLowerCase();
    const value = latin1(raw[i + 1] as Buffer | string);
    const before = out[name];
    out[name] = before === undefined ? value : `${before}, ${value}`;
  }
  return out;
}

function latin1(text: Buffer | string): string {
  return typeof text === 'string' ? text : text.toString('latin1');
}
