/**
 * OpenAI-compatible Chat Completions streaming (`"stream": true`): `chat.completion.chunk` events. Per
 * choice: a first chunk with `delta.role` (and empty `content`), the content pieces (with their share of
 * the log probabilities), tool calls as `delta.tool_calls` (index, id and name with the first arguments
 * piece), then a chunk with an empty delta and the `finish_reason`. With `stream_options.include_usage`
 * every chunk has `usage: null` and a last chunk with no choices carries the usage. `data: [DONE]` ends it.
 * A mid-stream error is a `data: {"error": …}` event, after which the stream just ends.
 */
import type { ChoiceAnswer } from '../answer.js';
import { pieceLogprobs, slicePieces } from '../stream-pieces.js';
import { type FormatStreamer, PlanBuilder, type PlanInput, type StreamAsk, sse } from '../stream-plan.js';
import { error, finishReason, logprobEntries, usageBody } from './openai.js';
import { isAbsent, isRecord, type Rejection, randomId, reject } from './shared.js';

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

function asked(body: unknown): StreamAsk | null | Rejection {
  if (!isRecord(body)) return null;
  const { stream, stream_options: options } = body;
  if (isAbsent(stream) || stream === false) {
    if (isAbsent(options)) return null;
    return reject(
      "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
      'stream_options',
    );
  }
  if (stream !== true) {
    return reject(
      `Invalid type for 'stream': expected a boolean, but got ${typeName(stream)} instead.`,
      'stream',
    );
  }
  if (isAbsent(options)) return { includeUsage: false, jsonArray: false };
  if (!isRecord(options)) {
    return reject(
      `Invalid type for 'stream_options': expected an object, but got ${typeName(options)} instead.`,
      'stream_options',
    );
  }
  for (const field of ['include_usage', 'include_obfuscation']) {
    const value = options[field];
    if (!isAbsent(value) && typeof value !== 'boolean') {
      return reject(
        `Invalid type for 'stream_options.${field}': expected a boolean, but got ${typeName(value)} instead.`,
        `stream_options.${field}`,
      );
    }
  }
  return { includeUsage: options.include_usage === true, jsonArray: false };
}

/** The deltas of one choice after its first chunk, one per content piece, as `choices[]` entries. */
function pieceChoices(input: PlanInput, choice: ChoiceAnswer, index: number): unknown[] {
  const { conv, pieces } = input;
  const out: unknown[] = [];
  const texts = slicePieces(choice.text, pieces);
  const logprobs = conv.logprobs === null ? null : pieceLogprobs(choice.text, texts, conv.logprobs.top);
  texts.forEach((content, k) => {
    out.push({
      index,
      delta: { content },
      logprobs: logprobs === null ? null : { content: logprobEntries(logprobs[k] ?? []), refusal: null },
      finish_reason: null,
    });
  });
  choice.toolCalls.forEach((call, callIndex) => {
    slicePieces(call.argumentsJson, pieces).forEach((args, k) => {
      const toolCall =
        k === 0
          ? {
              index: callIndex,
              id: `call_${randomId(24)}`,
              type: 'function',
              function: { name: call.name, arguments: args },
            }
          : { index: callIndex, function: { arguments: args } };
      out.push({ index, delta: { tool_calls: [toolCall] }, logprobs: null, finish_reason: null });
    });
  });
  return out;
}

function plan(input: PlanInput) {
  const { conv, answer, usage, ask } = input;
  const envelope = {
    id: `chatcmpl-${randomId(29)}`,
    object: 'chat.completion.chunk',
    created: Math.floor(Date.now() / 1000),
    model: conv.model,
    system_fingerprint: 'fp_sim',
  };
  const chunk = (choices: unknown[], usageField: unknown = null) =>
    sse(JSON.stringify({ ...envelope, choices, ...(ask.includeUsage ? { usage: usageField } : {}) }));
  const builder = new PlanBuilder();
  const usageChunk = ask.includeUsage && usage !== null ? [chunk([], usageBody(usage))] : [];
  if (input.noChoices) {
    return builder.finish(...(usageChunk.length > 0 ? usageChunk : [chunk([])]), sse('[DONE]'));
  }
  const choices = answer.choices;
  choices.forEach((choice, index) => {
    const calls = choice.toolCalls.length > 0;
    const logprobs = conv.logprobs === null ? null : { content: calls ? null : [], refusal: null };
    const delta = { role: 'assistant', content: calls ? null : '', refusal: null };
    builder.event(chunk([{ index, delta, logprobs, finish_reason: null }]));
  });
  builder.startNow();
  const perChoice = choices.map((choice, index) => pieceChoices(input, choice, index));
  const steps = Math.max(0, ...perChoice.map((list) => list.length));
  for (let k = 0; k < steps; k++) {
    const frames: string[] = [];
    for (const list of perChoice) if (k < list.length) frames.push(chunk([list[k]]));
    builder.piece(...frames);
  }
  const finishes = choices.map((choice, index) =>
    chunk([{ index, delta: {}, logprobs: null, finish_reason: finishReason(choice) }]),
  );
  return builder.finish(...finishes, ...usageChunk, sse('[DONE]'));
}

export const openaiStreamer: FormatStreamer = {
  requested: (call) => isRecord(call.body) && call.body.stream === true,
  asked: (call) => asked(call.body),
  contentType: () => 'text/event-stream; charset=utf-8',
  plan,
  errorFrame(_ask, _sent, status = 500, message) {
    const reply = error(status, message ?? `Simulated upstream error ${status} mid-stream.`);
    return sse(JSON.stringify(reply.body));
  },
};
