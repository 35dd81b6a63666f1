import { isRecord } from '../json-value.js';
import type { ErrorBodyReader } from '../upstream-failure-from-status.js';

/**
 * Reads an OpenAI-compatible error body. OpenAI and Groq send `{error:{message,type,code}}`; some
 * compatible upstreams send `{error:"…"}`, Mistral `{object:"error",message}` and FastAPI-style servers
 * `{detail:"…"}`. The status an error sent inside a stream stands for (`statusOf`) is the HTTP status some
 * hosts put in it (`code`, `status` or `status_code`), else read off OpenAI's words for it (`type` and
 * `code`): a rate limit or spent quota is 429, a bad key 401, an invalid request 400.
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
  statusOf(body: unknown): number | undefined {
    if (!isRecord(body)) return undefined;
    const error = isRecord(body.error) ? body.error : body;
    for (const field of ['code', 'status', 'status_code']) {
      const value = error[field];
      if (typeof value === 'number' && Number.isInteger(value) && value >= 400 && value <= 599) return value;
    }
    const words = [error.type, error.code]
      .filter((word): word is string => typeof word === 'string')
      .join(' ')
      .toLowerCase();
    if (/rate.?limit|quota|too.?many.?requests/.test(words)) return 429;
    if (/authentication|invalid.?api.?key|permission/.test(words)) return 401;
    if (/invalid.?request|context.?length/.test(words)) return 400;
    return undefined;
  },
};
