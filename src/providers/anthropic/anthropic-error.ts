import { isRecord } from '../json-value.js';
import type { ErrorBodyReader } from '../upstream-failure-from-status.js';

/**
 * Reads the message of an Anthropic error body, `{type:"error", error:{type, message}}`.
 *
 * @see https://docs.anthropic.com/en/api/errors
 */
export const anthropicErrorReader: ErrorBodyReader = {
  extractMessage(body: unknown): string | undefined {
    if (!isRecord(body) || !isRecord(body.error)) return undefined;
    const { message, type } = body.error;
    if (typeof message === 'string') return message;
    return typeof type === 'string' ? type : undefined;
  },
};
