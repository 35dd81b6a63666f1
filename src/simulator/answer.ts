/**
 * The simulated model: what it answers to a valid request, the same way in every wire format.
 *
 * - Tools offered, tool use not `none`, and the last turn is not tool results → it calls tools instead of
 *   writing: the forced ones, else every offered tool named (case-insensitively) in the last user text, else
 *   the first tool; only the first when parallel calls are off. Arguments come from `generate`.
 * - After tool results → `Simulated reply from <slug>: <name> returned <result>` (results joined with
 *   '; ', each cut to 200 characters).
 * - Structured output → `JSON.stringify(generate(schema))`; JSON mode → `{"reply": <the usual text>}`.
 * - Otherwise the usual reply (`fullReplyText`; 40 filler words unless the simulator is set to write more,
 *   for longer streams), noting the media it saw.
 * Choice i > 0 appends ` (choice i+1)` to its text (JSON-schema answers stay the same for every choice).
 * Reasoning tokens come first; the text is truncated so that reasoning plus text never pass the cap.
 */
import type { Conversation, ToolSpec } from './conversation.js';
import { mediaNote } from './media.js';
import { toolCallTokens } from './prompt-tokens.js';
import { composeReply, cutReply, type Finish, fullReplyText, REPLY_WORDS, tokenCount } from './reply.js';
import { generate, type JsonValue, lastWord } from './schema.js';

/** Characters of each tool result quoted in the reply that follows it. */
export const RESULT_QUOTE_CHARS = 200;

export interface ToolCallAnswer {
  name: string;
  /** The arguments, generated from the tool's schema. */
  args: JsonValue;
  /** `JSON.stringify(args)`. */
  argumentsJson: string;
}

export interface ChoiceAnswer {
  /** The visible text ('' when there is none, e.g. only tool calls). */
  text: string;
  finish: Finish | 'tool_calls';
  stopSequence: string | null;
  toolCalls: ToolCallAnswer[];
  reasoningTokens: number;
  /** Text + tool calls + reasoning tokens (never above the cap). */
  completionTokens: number;
}

export interface Answer {
  choices: ChoiceAnswer[];
  completionTokens: number;
  reasoningTokens: number;
}

/** The tools the model calls, or [] when it writes text. */
export function chosenTools(conv: Conversation): ToolSpec[] {
  const { tools, toolUse } = conv;
  if (tools.length === 0 || toolUse.kind === 'none' || conv.toolResults !== null) return [];
  const candidates = toolUse.kind === 'only' ? tools.filter((t) => toolUse.names.includes(t.name)) : tools;
  if (candidates.length === 0) return [];
  const text = conv.lastUserText.toLowerCase();
  let chosen = candidates.filter((t) => text.includes(t.name.toLowerCase()));
  if (chosen.length === 0) chosen = [candidates[0] as ToolSpec];
  return conv.parallelToolCalls ? chosen : chosen.slice(0, 1);
}

/** The text before a tool call Claude writes when it chose the tools itself. */
export function leadText(calls: readonly ToolCallAnswer[]): string {
  return `I'll call ${calls.map((c) => c.name).join(' and ')}.`;
}

/** The reply to tool results: each result quoted, cut to 200 characters. */
export function resultsText(slug: string, conv: Conversation): string {
  const quoted = (conv.toolResults ?? []).map(
    (r) => `${r.name} returned ${r.text.slice(0, RESULT_QUOTE_CHARS)}`,
  );
  return `Simulated reply from ${slug}: ${quoted.join('; ')}`;
}

/** Whether the request is plain text, answered exactly as before tools existed (and memoised). */
function isPlain(conv: Conversation): boolean {
  return (
    conv.output.kind === 'text' &&
    conv.toolResults === null &&
    conv.media.images + conv.media.audio + conv.media.files === 0
  );
}

/** The full, untruncated text of choice `index`. */
function fullText(slug: string, conv: Conversation, index: number, words: number): string {
  const { output } = conv;
  if (output.kind === 'json_schema')
    return JSON.stringify(generate(output.schema, lastWord(conv.lastUserText)));
  if (output.kind === 'enum') {
    const value = generate(output.schema, lastWord(conv.lastUserText));
    return typeof value === 'string' ? value : JSON.stringify(value);
  }
  let text =
    conv.toolResults === null
      ? fullReplyText(slug, conv.lastUserText, mediaNote(conv.media), words)
      : resultsText(slug, conv);
  if (index > 0) text += ` (choice ${index + 1})`;
  return output.kind === 'json_object' ? JSON.stringify({ reply: text }) : text;
}

function textChoice(
  slug: string,
  conv: Conversation,
  index: number,
  reasoning: number,
  words: number,
): ChoiceAnswer {
  const reply =
    index === 0 && reasoning === 0 && isPlain(conv)
      ? composeReply(slug, conv.lastUserText, conv.cap, conv.stops, words)
      : cutReply(fullText(slug, conv, index, words), conv.cap - reasoning, conv.stops);
  return {
    text: reply.text,
    finish: reply.finish,
    stopSequence: reply.stopSequence,
    toolCalls: [],
    reasoningTokens: reasoning,
    completionTokens: reply.completionTokens + reasoning,
  };
}

function callChoice(conv: Conversation, calls: ToolCallAnswer[], reasoning: number): ChoiceAnswer {
  const lead = conv.leadText ? leadText(calls) : '';
  const leadTokens = lead === '' ? 0 : tokenCount(lead);
  let callTokens = 0;
  for (const call of calls) callTokens += toolCallTokens(call.name, call.argumentsJson);
  if (reasoning + leadTokens + callTokens <= conv.cap) {
    return {
      text: lead,
      finish: 'tool_calls',
      stopSequence: null,
      toolCalls: calls,
      reasoningTokens: reasoning,
      completionTokens: reasoning + leadTokens + callTokens,
    };
  }
  // The calls do not fit in the cap: the answer breaks off before them.
  const cut = cutReply(lead, conv.cap - reasoning, []);
  return {
    text: cut.text,
    finish: 'length',
    stopSequence: null,
    toolCalls: [],
    reasoningTokens: reasoning,
    completionTokens: reasoning + cut.completionTokens,
  };
}

/** The answer to a valid request; `words`: filler words of the usual reply. */
export function answer(slug: string, conv: Conversation, words = REPLY_WORDS): Answer {
  const reasoning = Math.min(conv.reasoningTokens, conv.cap);
  const tools = chosenTools(conv);
  const word = tools.length > 0 ? lastWord(conv.lastUserText) : '';
  const choices: ChoiceAnswer[] = [];
  for (let index = 0; index < conv.n; index++) {
    if (tools.length > 0) {
      const calls = tools.map((t) => {
        const args = generate(t.schema, word);
        return { name: t.name, args, argumentsJson: JSON.stringify(args) };
      });
      choices.push(callChoice(conv, calls, reasoning));
    } else {
      choices.push(textChoice(slug, conv, index, reasoning, words));
    }
  }
  let completionTokens = 0;
  let reasoningTokens = 0;
  for (const c of choices) {
    completionTokens += c.completionTokens;
    reasoningTokens += c.reasoningTokens;
  }
  return { choices, completionTokens, reasoningTokens };
}
