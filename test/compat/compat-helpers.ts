import { composeReply, promptTokens } from '../../src/simulator/reply.js';
import { type Harness, type HarnessOptions, startHarness } from '../helpers/harness.js';

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * Replaces `globalThis.fetch` (what the openai SDK, LangChain — tiktoken downloads included — and the AI
 * SDK use by default) with one that serves loopback only and records every other URL instead of calling
 * it, so a test proves its client library never tried the network. Install before creating clients.
 */
export function guardNetwork(): { refused: string[]; restore(): void } {
  const original = globalThis.fetch;
  const refused: string[] = [];
  globalThis.fetch = (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (!LOOPBACK.has(url.hostname)) {
      refused.push(url.href);
      return Promise.reject(new TypeError(`network access outside loopback refused in tests: ${url.href}`));
    }
    return original(input, init);
  };
  return {
    refused,
    restore() {
      globalThis.fetch = original;
    },
  };
}

/** A Tollgate listening on 127.0.0.1 (real sockets) with the upstream simulator; `baseURL` ends in /api/v1. */
export async function startListening(options: HarnessOptions = {}): Promise<{ h: Harness; baseURL: string }> {
  const h = await startHarness(options);
  const url = await h.server.listen();
  if (new URL(url).hostname !== '127.0.0.1') throw new Error(`expected a loopback listener, got ${url}`);
  return { h, baseURL: `${url}/api/v1` };
}

/**
 * The usage the simulator reports for a one-message prompt answered by the provider `slug` (it counts
 * with the o200k tokenizer: prompt text + 4 per message + 3; the reply's own tokens). The reply is far
 * shorter than any cap the gateway sends.
 */
export function simulatedUsage(slug: string, userText: string): { prompt: number; completion: number } {
  return {
    prompt: promptTokens([userText]),
    completion: composeReply(slug, userText, Number.MAX_SAFE_INTEGER, []).completionTokens,
  };
}
