import { afterAll, beforeAll, beforeEach } from 'vitest';
import { type Simulator, startSimulator, type WireFormat } from '../../src/simulator/index.js';

export type Json = Record<string, unknown>;

export const AUTH: Record<WireFormat, Record<string, string>> = {
  'openai-compatible': { authorization: 'Bearer sk-test' },
  anthropic: { 'x-api-key': 'sk-ant-test', 'anthropic-version': '2023-06-01' },
  gemini: { 'x-goog-api-key': 'goog-test' },
};

/** Starts one simulator for the file (reset before each test); `sim()` is it. */
export function sharedSimulator(): () => Simulator {
  let sim: Simulator | undefined;
  beforeAll(async () => {
    sim = await startSimulator();
  });
  afterAll(async () => {
    await sim?.close();
  });
  beforeEach(() => {
    sim?.reset();
  });
  return () => {
    if (!sim) throw new Error('simulator not started');
    return sim;
  };
}

export function endpoint(
  sim: Simulator,
  format: WireFormat,
  slug: string,
  model = 'gemini-2.5-flash',
): string {
  const base = sim.baseUrl(format, slug);
  if (format === 'openai-compatible') return `${base}/chat/completions`;
  if (format === 'anthropic') return `${base}/v1/messages`;
  return `${base}/v1beta/models/${model}:generateContent`;
}

export interface Result {
  status: number;
  body: Json;
}

/** POSTs `body` to the format's endpoint for `slug`, with valid credentials. */
export async function post(sim: Simulator, format: WireFormat, slug: string, body: unknown): Promise<Result> {
  const res = await fetch(endpoint(sim, format, slug), {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...AUTH[format] },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Json };
}

/** The error message of a 400 in any format's error shape. */
export function errorMessage(body: Json): string {
  const error = body.error as { message?: unknown } | undefined;
  return typeof error?.message === 'string' ? error.message : '';
}

/** A tiny valid PNG (1×1), base64. */
export const PNG_1X1 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

/** `n` bytes of base64 (of zero bytes). */
export function base64Of(n: number): string {
  return Buffer.alloc(n).toString('base64');
}

/** A weather tool's parameters, exercising every rule of the generator. */
export const WEATHER_SCHEMA = {
  type: 'object',
  properties: {
    city: { type: 'string' },
    unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
    days: { type: 'integer', minimum: 3 },
    ratio: { type: 'number' },
    detailed: { type: 'boolean' },
    tags: { type: 'array', items: { type: 'string' } },
    where: { type: 'object', properties: { lat: { type: 'number', minimum: -90 } } },
    mode: { anyOf: [{ type: 'integer' }, { type: 'string' }] },
    nothing: { type: 'null' },
  },
  required: ['city', 'unit'],
};

/** What the generator makes of WEATHER_SCHEMA when the last user word is `word`. */
export function weatherArgs(word: string): Json {
  return {
    city: word,
    unit: 'celsius',
    days: 3,
    ratio: 1,
    detailed: true,
    tags: [word],
    where: { lat: -90 },
    mode: 1,
    nothing: null,
  };
}

export const TIME_SCHEMA = { type: 'object', properties: { zone: { type: 'string' } }, required: ['zone'] };
