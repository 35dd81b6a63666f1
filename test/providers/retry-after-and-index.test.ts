import { describe, expect, it } from 'vitest';
import {
  adapterFor,
  anthropicAdapter,
  geminiAdapter,
  openaiCompatibleAdapter,
  parseRetryAfterMs,
} from '../../src/providers/index.js';

describe('adapterFor', () => {
  it('has one adapter per wire format', () => {
    expect(adapterFor('openai-compatible')).toBe(openaiCompatibleAdapter);
    expect(adapterFor('anthropic')).toBe(anthropicAdapter);
    expect(adapterFor('gemini')).toBe(geminiAdapter);
    for (const format of ['openai-compatible', 'anthropic', 'gemini'] as const) {
      expect(adapterFor(format).wireFormat).toBe(format);
    }
  });
});

describe('parseRetryAfterMs', () => {
  const now = Date.parse('2025-01-01T00:00:00Z');

  it('prefers retry-after-ms, then retry-after seconds, then an HTTP date', () => {
    expect(parseRetryAfterMs({ 'retry-after-ms': '250.4', 'retry-after': '9' }, now)).toBe(251);
    expect(parseRetryAfterMs({ 'retry-after': '2' }, now)).toBe(2000);
    expect(parseRetryAfterMs({ 'retry-after': '0.5' }, now)).toBe(500);
    expect(parseRetryAfterMs({ 'retry-after': 'Wed, 01 Jan 2025 00:00:30 GMT' }, now)).toBe(30_000);
  });

  it('a past date is 0; garbage and absence are undefined', () => {
    expect(parseRetryAfterMs({ 'retry-after': 'Tue, 31 Dec 2024 23:00:00 GMT' }, now)).toBe(0);
    expect(parseRetryAfterMs({ 'retry-after': 'soon' }, now)).toBeUndefined();
    expect(parseRetryAfterMs({ 'retry-after': '-5' }, now)).toBeUndefined();
    expect(parseRetryAfterMs({ 'retry-after-ms': 'x' }, now)).toBeUndefined();
    expect(parseRetryAfterMs({}, now)).toBeUndefined();
  });
});
