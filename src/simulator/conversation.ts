/**
 * A valid request, read by its format into what the simulated model needs: the same for the three wire
 * formats, so that they all behave alike (`answer.ts`).
 */
import type { MediaTally } from './media.js';

/** A function the request offers. `schema` is its parameters' schema as written (absent: none). */
export interface ToolSpec {
  name: string;
  schema: unknown;
}

/**
 * How the request lets the model use its tools: `auto` (OpenAI `auto`, Anthropic `auto`, Gemini `AUTO` /
 * `VALIDATED`), `required` (OpenAI `required`, Anthropic `any`, Gemini `ANY`), `none`, or `only` a named
 * set (OpenAI / Anthropic named choice, Gemini `allowedFunctionNames`).
 */
export type ToolUse =
  | { kind: 'auto' }
  | { kind: 'required' }
  | { kind: 'none' }
  | { kind: 'only'; names: string[] };

/** What the text of the answer must be. `enum`: Gemini's `text/x.enum` (the text is one enum value). */
export type OutputFormat =
  | { kind: 'text' }
  | { kind: 'json_object' }
  | { kind: 'json_schema'; schema: unknown }
  | { kind: 'enum'; schema: unknown };

/** A tool's result in the last turn: the function's name and the result as text. */
export interface ToolResult {
  name: string;
  text: string;
}

/** What the server needs from a parsed, valid request. */
export interface Conversation {
  model: string;
  /**
   * The text of every message, system included, one entry per message (its text parts only: tool calls,
   * tool results and media are counted apart, in `extraPromptTokens`).
   */
  messageTexts: string[];
  /** Text of the last user message ('' if none); a turn of tool results alone is not a user message. */
  lastUserText: string;
  /** Completion-token cap per choice (the request's, or the default). */
  cap: number;
  stops: string[];
  /**
   * Prompt tokens beyond `promptTokens(messageTexts)`: the tool definitions, the tool calls and results of
   * the history, and the media (see `prompt-tokens.ts`). 0 for a text-only request.
   */
  extraPromptTokens: number;
  tools: ToolSpec[];
  toolUse: ToolUse;
  /**
   * false: at most one tool call per answer (OpenAI `parallel_tool_calls: false`, Anthropic
   * `disable_parallel_tool_use`).
   */
  parallelToolCalls: boolean;
  /**
   * The results the last turn consists of, or null when the last turn is not tool results alone (one that
   * also holds the user's own text is a user message, as an OpenAI user message after tool messages is).
   */
  toolResults: ToolResult[] | null;
  media: MediaTally;
  output: OutputFormat;
  /** Choices / candidates to return (1 for Anthropic). */
  n: number;
  /** Log probabilities asked for, with `top` alternatives per token; null when not asked. */
  logprobs: { top: number } | null;
  /** Reasoning tokens each choice spends before its text (0: no reasoning). */
  reasoningTokens: number;
  /** Anthropic, tool choice `auto`: a short text block before the tool calls, as Claude often writes. */
  leadText: boolean;
  /** Gemini `includeThoughts` (with thinking on): a thought part before the answer. */
  showThoughts: boolean;
}
