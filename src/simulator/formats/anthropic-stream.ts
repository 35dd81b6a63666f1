/**
 * Anthropic Messages streaming (`"stream": true`): named SSE events. `message_start` (the message without
 * content, `usage.input_tokens` and an `output_tokens` of 1), then per block `content_block_start`,
 * `content_block_delta`s (`thinking_delta` then one `signature_delta`, `text_delta`, `input_json_delta`
 * pieces of the tool input) and `content_block_stop`; one `ping` after the first block starts;
 * `message_delta` with the stop reason and the final usage; `message_stop`. A mid-stream error is an
 * `event: error` with the error body, after which the stream just ends.
 */
import type { ChoiceAnswer } from '../answer.js';
import { slicePieces } from '../stream-pieces.js';
import { type FormatStreamer, PlanBuilder, type PlanInput, sse } from '../stream-plan.js';
import { error, inputUsage, stopReason, usageBody } from './anthropic.js';
import { signThinking, THINKING_TEXT } from './anthropic-blocks.js';
import { isAbsent, isRecord, randomId, reject } from './shared.js';

function event(type: string, data: Record<string, unknown>): string {
  return sse(JSON.stringify({ type, ...data }), type);
}

/** The blocks of the answer, in the order of the non-stream `content`, each as start, pieces and stop. */
function writeBlocks(builder: PlanBuilder, choice: ChoiceAnswer, pieces: number): void {
  let index = 0;
  const block = (start: unknown, deltas: unknown[], beforeStop: unknown[] = []) => {
    builder.event(event('content_block_start', { index, content_block: start }));
    if (index === 0) {
      builder.event(event('ping', {}));
      builder.startNow();
    }
    for (const delta of deltas) builder.piece(event('content_block_delta', { index, delta }));
    for (const delta of beforeStop) builder.event(event('content_block_delta', { index, delta }));
    builder.event(event('content_block_stop', { index }));
    index++;
  };
  if (choice.reasoningTokens > 0) {
    block(
      { type: 'thinking', thinking: '', signature: '' },
      slicePieces(THINKING_TEXT, pieces).map((thinking) => ({ type: 'thinking_delta', thinking })),
      [{ type: 'signature_delta', signature: signThinking(THINKING_TEXT) }],
    );
  }
  if (choice.toolCalls.length === 0 || choice.text !== '') {
    block(
      { type: 'text', text: '' },
      slicePieces(choice.text, pieces).map((text) => ({ type: 'text_delta', text })),
    );
  }
  for (const call of choice.toolCalls) {
    block(
      { type: 'tool_use', id: `toolu_01${randomId(22)}`, name: call.name, input: {} },
      slicePieces(call.argumentsJson, pieces).map((partial_json) => ({
        type: 'input_json_delta',
        partial_json,
      })),
    );
  }
}

function plan(input: PlanInput) {
  const { conv, usage } = input;
  const builder = new PlanBuilder();
  const startUsage =
    usage === null
      ? {}
      : {
          usage: { ...inputUsage(usage), output_tokens: 1 },
        };
  builder.event(
    event('message_start', {
      message: {
        id: `msg_${randomId(24)}`,
        type: 'message',
        role: 'assistant',
        model: conv.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        ...startUsage,
      },
    }),
  );
  // Anthropic has no `n`: the answer has one choice.
  const choice = input.answer.choices[0];
  if (input.noChoices || !choice) {
    builder.event(event('ping', {}));
    builder.startNow();
  } else {
    writeBlocks(builder, choice, input.pieces);
  }
  const delta = {
    stop_reason: choice && !input.noChoices ? stopReason(choice) : 'end_turn',
    stop_sequence: choice && !input.noChoices ? choice.stopSequence : null,
  };
  return builder.finish(
    event('message_delta', { delta, ...(usage === null ? {} : { usage: usageBody(usage) }) }),
    event('message_stop', {}),
  );
}

export const anthropicStreamer: FormatStreamer = {
  requested: (call) => isRecord(call.body) && call.body.stream === true,
  asked(call) {
    const body = call.body;
    if (!isRecord(body) || isAbsent(body.stream) || body.stream === false) return null;
    if (body.stream !== true) return reject('stream: Input should be a valid boolean');
    return { includeUsage: false, jsonArray: false };
  },
  contentType: () => 'text/event-stream; charset=utf-8',
  plan,
  errorFrame(_ask, _sent, status = 529, message) {
    const text =
      message ?? (status === 529 ? 'Overloaded' : `Simulated upstream error ${status} mid-stream.`);
    return sse(JSON.stringify(error(status, text).body), 'error');
  },
};
