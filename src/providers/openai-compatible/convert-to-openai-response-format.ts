import type { ResponseFormat } from '../types.js';
import type { OpenAIResponseFormat } from './openai-wire-types.js';

/**
 * Writes `response_format` as OpenAI spells it: `{type: 'text'}`, `{type: 'json_object'}` (JSON mode) or
 * `{type: 'json_schema', json_schema: {name, description, schema, strict}}` (structured output), each
 * optional key only when the caller set it.
 *
 * @see https://platform.openai.com/docs/api-reference/chat/create#chat-create-response_format
 * @see https://platform.openai.com/docs/guides/structured-outputs
 */
export function convertToOpenAIResponseFormat(format: ResponseFormat): OpenAIResponseFormat {
  if (format.type !== 'json_schema') return { type: format.type };
  const jsonSchema: Extract<OpenAIResponseFormat, { type: 'json_schema' }>['json_schema'] = {
    name: format.name,
  };
  if (format.description !== undefined) jsonSchema.description = format.description;
  if (format.schema !== undefined) jsonSchema.schema = format.schema;
  if (format.strict !== undefined) jsonSchema.strict = format.strict;
  return { type: 'json_schema', json_schema: jsonSchema };
}
