import type { OpenAIOnlyFields, ReasoningEffort } from '../types.js';

/**
 * The request side of OpenAI's Chat Completions, as this adapter writes it: only the shapes it sends
 * (the answer is read from `unknown`, field by field, since a compatible upstream may differ).
 *
 * @see https://platform.openai.com/docs/api-reference/chat/create
 * @see https://github.com/openai/openai-node/blob/master/src/resources/chat/completions/completions.ts
 */

/** `image_url.url` is an http(s) URL or a `data:<mediaType>;base64,<data>` URL. */
export interface OpenAIImagePart {
  type: 'image_url';
  image_url: { url: string; detail?: 'auto' | 'low' | 'high' };
}

export interface OpenAIAudioPart {
  type: 'input_audio';
  input_audio: { data: string; format: string };
}

/** `file_data` is a `data:<mediaType>;base64,<data>` URL; `file_id` an upstream file id. */
export interface OpenAIFilePart {
  type: 'file';
  file: { file_data?: string; file_id?: string; filename?: string };
}

export type OpenAIContentPart =
  | { type: 'text'; text: string }
  | OpenAIImagePart
  | OpenAIAudioPart
  | OpenAIFilePart;

export interface OpenAIToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export type OpenAIMessage =
  | { role: 'system'; content: string; name?: string }
  | { role: 'user'; content: string | OpenAIContentPart[]; name?: string }
  | {
      role: 'assistant';
      content: string | null;
      name?: string;
      tool_calls?: OpenAIToolCall[];
      refusal?: string;
    }
  | { role: 'tool'; tool_call_id: string; content: string };

export interface OpenAITool {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean };
}

export type OpenAIToolChoice =
  | 'auto'
  | 'none'
  | 'required'
  | { type: 'function'; function: { name: string } };

export type OpenAIResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | {
      type: 'json_schema';
      json_schema: { name: string; description?: string; schema?: Record<string, unknown>; strict?: boolean };
    };

/** The body of `POST /chat/completions`; absent keys are not sent. */
export interface OpenAIChatRequestBody extends OpenAIOnlyFields {
  model: string;
  messages: OpenAIMessage[];
  max_tokens: number;
  stream: boolean;
  /** Only with `stream: true`: asks for the usage chunk that ends the stream. */
  stream_options?: { include_usage: true };
  temperature?: number;
  top_p?: number;
  stop?: string[];
  presence_penalty?: number;
  frequency_penalty?: number;
  seed?: number;
  user?: string;
  logit_bias?: Record<string, number>;
  n?: number;
  logprobs?: true;
  top_logprobs?: number;
  tools?: OpenAITool[];
  tool_choice?: OpenAIToolChoice;
  parallel_tool_calls?: boolean;
  response_format?: OpenAIResponseFormat;
  reasoning_effort?: ReasoningEffort;
}
