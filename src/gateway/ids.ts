import { randomAlnum } from '../random.js';

/** Completion id in OpenAI's form: `chatcmpl-` + 29 alphanumerics. */
export function newCompletionId(): string {
  return `chatcmpl-${randomAlnum(29)}`;
}
