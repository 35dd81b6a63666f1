import type { IncomingMessage, ServerResponse } from 'node:http';

/** Request bodies above this are answered 413. */
export const MAX_BODY_BYTES = 8 * 1024 * 1024;

export type BodyResult = { tooLarge: false; raw: string } | { tooLarge: true };

/** Reads the whole body; past the limit it keeps draining (so the client can read the answer) but drops it. */
export function readBody(req: IncomingMessage): Promise<BodyResult> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) chunks.length = 0;
      else chunks.push(chunk);
    });
    req.on('end', () =>
      resolve(
        size > MAX_BODY_BYTES
          ? { tooLarge: true }
          : { tooLarge: false, raw: Buffer.concat(chunks).toString('utf8') },
      ),
    );
    req.on('error', reject);
  });
}

/** The parsed JSON, or the raw string when it is not JSON. */
export function parseJson(raw: string): unknown {
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw;
  }
}

/** Header names lower-cased (Node already does), repeated values joined. */
export function plainHeaders(req: IncomingMessage): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    out[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

/** Sends a JSON body (unless the response is already gone). */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  sendRaw(res, status, JSON.stringify(body), headers);
}

export function sendRaw(
  res: ServerResponse,
  status: number,
  text: string,
  headers: Record<string, string> = {},
): void {
  if (res.destroyed || res.headersSent) return;
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(text)),
    ...headers,
  });
  res.end(text);
}
