import { isRecord } from '../json-value.js';
import type { ErrorBodyReader } from '../upstream-failure-from-status.js';

/**
 * Reads the message of an OpenAI-compatible error body. OpenAI and Groq send `{error:{message,type,code}}`;
 * some compatible upstreams send `{error:"…"}`, Mistral `{object:"error",message}` and FastAPI-style
 * servers `{detail:"…"}`.
 *
 * @see https://platform.openai.com/docs/guides/error-codes
 */
export const openaiErrorReader: ErrorBodyReader = {
  extractMessage(body: unknown): string | undefined {
    if (!isRecord(body)) return undefined;
    const { error } = body;
    if (isRecord(error) && typeof error.message === 'string') return error.message;
    if (typeof error === 'string') return error;
    if (typeof body.message === 'string') return body.message;
    if (typeof body.detail === 'string') return body.detail;
    return undefined;
  },
};
