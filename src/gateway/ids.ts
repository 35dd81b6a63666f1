import { timeOrderedAlnum } from '../random.js';

/**
 * Completion id in OpenAI's form: `chatcmpl-` + 29 alphanumerics; the first 8 are the time, so the
 * usage rows keyed by it are appended in order (see `timeOrderedAlnum`), the other 21 random.
 */
export function newCompletionId(): string {
  return `chatcmpl-${timeOrderedAlnum(29)}`;
}
