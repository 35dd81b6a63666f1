/**
 * Gemini streaming (`:streamGenerateContent`): with `alt=sse`, `data: <GenerateContentResponse>` events
 * (CRLF line ends, no closing event); without it, one JSON array written element by element. Each chunk
 * holds the candidates' next parts: the text (and the thought text) in pieces, the function calls whole in
 * one chunk. A candidate's last chunk has its `finishReason`; the index is written only when it is not 0
 * (proto JSON leaves zeros out). Every chunk carries `usageMetadata`: the prompt count until the last one,
 * which has the whole usage. A mid-stream error is the bare error JSON (not an SSE event), then the end.
 */
import type { ChoiceAnswer } from '../answer.js';
import type { TokenLogprob } from '../logprobs.js';
import { pieceLogprobs, slicePieces } from '../stream-pieces.js';
import { type FormatStreamer, PlanBuilder, type PlanInput, type StreamAsk, sse } from '../stream-plan.js';
import { error, finishReason, logprobsOfTokens, usageMetadata } from './gemini.js';
import { THOUGHT_TEXT } from './gemini-request.js';
import { type Conversation, randomId, reject } from './shared.js';

/** One chunk's share of a candidate: its parts (null: none at all) and the log probabilities of its text. */
interface Piece {
  parts: unknown[] | null;
  logprobs: TokenLogprob[] | null;
}

function candidatePieces(conv: Conversation, choice: ChoiceAnswer, pieces: number): Piece[] {
  const out: Piece[] = [];
  if (conv.showThoughts && choice.reasoningTokens > 0) {
    for (const text of slicePieces(THOUGHT_TEXT, pieces)) {
      out.push({ parts: [{ text, thought: true }], logprobs: null });
    }
  }
  if (choice.toolCalls.length > 0) {
    const parts = choice.toolCalls.map((call) => ({ functionCall: { name: call.name, args: call.args } }));
    out.push({ parts, logprobs: null });
  } else if (choice.text !== '' || choice.finish !== 'length') {
    // An empty text is still one part, as in the non-stream answer.
    const texts = choice.text === '' ? [''] : slicePieces(choice.text, pieces);
    const logprobs = conv.logprobs === null ? null : pieceLogprobs(choice.text, texts, conv.logprobs.top);
    texts.forEach((text, k) => {
      out.push({ parts: [{ text }], logprobs: logprobs === null ? null : (logprobs[k] ?? []) });
    });
  }
  if (out.length === 0) out.push({ parts: null, logprobs: null });
  return out;
}

function plan(input: PlanInput) {
  const { conv, usage, ask } = input;
  const builder = new PlanBuilder();
  let written = 0;
  const frame = (body: unknown): string => {
    const json = JSON.stringify(body);
    if (!ask.jsonArray) return sse(json, undefined, '\r\n');
    return written++ === 0 ? json : `,\r\n${json}`;
  };
  if (ask.jsonArray) {
    builder.event('[');
    builder.startNow();
  }
  const ending = ask.jsonArray ? [']'] : [];
  if (input.noChoices) {
    if (usage !== null) builder.piece(frame({ usageMetadata: usageMetadata(usage) }));
    return builder.finish(...ending);
  }
  const responseId = randomId(22);
  const top = conv.logprobs?.top ?? 0;
  const perCandidate = input.answer.choices.map((choice) => candidatePieces(conv, choice, input.pieces));
  const steps = Math.max(...perCandidate.map((list) => list.length));
  for (let k = 0; k < steps; k++) {
    const candidates: unknown[] = [];
    perCandidate.forEach((list, index) => {
      const piece = list[k];
      if (!piece) return;
      const last = k === list.length - 1;
      candidates.push({
        content: piece.parts === null ? { role: 'model' } : { parts: piece.parts, role: 'model' },
        ...(last ? { finishReason: finishReason(input.answer.choices[index] as ChoiceAnswer) } : {}),
        ...(index > 0 ? { index } : {}),
        ...(piece.logprobs === null ? {} : logprobsOfTokens(piece.logprobs, top)),
      });
    });
    let metadata: unknown;
    if (usage !== null) {
      metadata =
        k === steps - 1
          ? usageMetadata(usage)
          : { promptTokenCount: usage.promptTokens, totalTokenCount: usage.promptTokens };
    }
    builder.piece(
      frame({
        candidates,
        ...(metadata === undefined ? {} : { usageMetadata: metadata }),
        modelVersion: conv.model,
        responseId,
      }),
    );
  }
  return builder.finish(...ending);
}

function asked(subpath: string, query: URLSearchParams): StreamAsk | null | ReturnType<typeof reject> {
  if (!subpath.endsWith(':streamGenerateContent')) return null;
  const alt = query.get('alt');
  if (alt === 'sse') return { includeUsage: false, jsonArray: false };
  if (alt === null || alt === 'json') return { includeUsage: false, jsonArray: true };
  return reject(
    `Invalid value at 'alt' (${JSON.stringify(alt)}): the simulator streams with alt=sse, or as a JSON array without alt.`,
  );
}

export const geminiStreamer: FormatStreamer = {
  requested: (call) => call.subpath.endsWith(':streamGenerateContent'),
  asked: (call) => asked(call.subpath, call.query),
  contentType: (ask) => (ask.jsonArray ? 'application/json; charset=UTF-8' : 'text/event-stream'),
  plan,
  errorFrame(ask, sent, status = 503, message) {
    const text =
      message ??
      (status === 503 ? 'The model is overloaded. Please try again later.' : `Simulated error ${status}.`);
    const json = JSON.stringify(error(status, text).body, null, 2);
    if (ask.jsonArray) return `${sent === 0 ? '' : ',\r\n'}${json}]`;
    return `${json}\n`;
  },
};
