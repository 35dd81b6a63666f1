import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  type ChatMessage,
  type ProviderConfig,
  type ProviderName,
  type UpstreamChatRequest,
  UpstreamError,
  type UpstreamHttpResponse,
  type WireFormat,
} from '../../src/providers/types.js';

export const TEST_KEY = 'sk-test-SECRET-0123456789';

export function providerConfig(
  name: ProviderName,
  wireFormat: WireFormat,
  baseUrl: string,
  model: string,
): ProviderConfig {
  return {
    name,
    wireFormat,
    baseUrl,
    apiKey: TEST_KEY,
    model,
    inputPriceNano: 1_000_000_000,
    outputPriceNano: 2_000_000_000,
    cacheReadPriceNano: 100_000_000,
    cacheWritePriceNano: 1_250_000_000,
    defaultMaxTokens: 4096,
    enabled: true,
    timeoutMs: 30_000,
    connectTimeoutMs: 5_000,
    firstByteTimeoutMs: 60_000,
    streamIdleTimeoutMs: 30_000,
    inAutoRotation: true,
    imageTokens: 1600,
  };
}

/** The conversation every adapter test builds a request from. */
export const CONVERSATION: ChatMessage[] = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Hi' },
  { role: 'assistant', content: 'Hello.' },
  { role: 'user', content: 'Say more.' },
];

/** A call with nothing but the conversation set; `overrides` adds tools, images, formats and so on. */
export function chatRequest(overrides: Partial<UpstreamChatRequest> = {}): UpstreamChatRequest {
  return {
    model: 'test-model',
    messages: CONVERSATION,
    maxTokens: 256,
    params: {},
    tools: undefined,
    toolChoice: undefined,
    parallelToolCalls: undefined,
    responseFormat: undefined,
    n: 1,
    logprobs: undefined,
    reasoningEffort: undefined,
    openai: {},
    ...overrides,
  };
}

/** A recorded upstream body from `__fixtures__/`, as text (the way the HTTP client hands it over). */
export function fixture(name: string): string {
  return readFileSync(fileURLToPath(new URL(`./__fixtures__/${name}`, import.meta.url)), 'utf8');
}

export function httpResponse(
  status: number,
  body: unknown,
  headers: Record<string, string | undefined> = { 'content-type': 'application/json' },
): UpstreamHttpResponse {
  return { status, headers, bodyText: typeof body === 'string' ? body : JSON.stringify(body) };
}

/** Parses a built request body (always a JSON object) for assertions. */
export function jsonBody(body: string): Record<string, unknown> {
  return JSON.parse(body) as Record<string, unknown>;
}

/** Runs `fn`, which must throw an `UpstreamError`, and returns that error. */
export function catchError(fn: () => unknown): UpstreamError {
  try {
    fn();
  } catch (error) {
    if (error instanceof UpstreamError) return error;
    throw error;
  }
  throw new Error('expected an UpstreamError');
}
