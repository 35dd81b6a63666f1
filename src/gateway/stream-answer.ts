import type { ChoiceResult, FinishReason, StreamDelta, ToolCall } from '../providers/types.js';

interface ChoiceParts {
  text: string[];
  refusal: string[];
  toolCalls: ToolCall[];
  finishReason: FinishReason | undefined;
  logprobs: unknown[] | undefined;
}

/**
 * The answer a stream has carried so far, assembled from its deltas: what a streamed call is billed for
 * when the upstream reports no usage (or is cut off), and what an Idempotency-Key stores for a replay.
 */
export class StreamAnswer {
  private readonly parts: ChoiceParts[] = [];

  add(deltas: readonly StreamDelta[]): void {
    for (const delta of deltas) {
      const choice = this.choice(delta.choice);
      switch (delta.type) {
        case 'text':
          choice.text.push(delta.text);
          break;
        case 'refusal':
          choice.refusal.push(delta.text);
          break;
        case 'tool_call': {
          let call = choice.toolCalls[delta.index];
          if (call === undefined) {
            call = { id: delta.id ?? '', name: delta.name ?? '', arguments: '' };
            choice.toolCalls[delta.index] = call;
          }
          if (delta.id !== undefined) call.id = delta.id;
          if (delta.name !== undefined) call.name = delta.name;
          call.arguments += delta.arguments;
          break;
        }
        case 'logprobs': {
          const content = delta.logprobs.content;
          if (!Array.isArray(content)) break;
          if (choice.logprobs === undefined) choice.logprobs = [];
          choice.logprobs.push(...content);
          break;
        }
        case 'finish':
          choice.finishReason = delta.reason;
          break;
        case 'event':
          // A relayed upstream event: its content came as the other deltas too.
          break;
      }
    }
  }

  /**
   * The choices as a completion would carry them. A choice the stream left without a finish reason (the
   * client or the upstream went away) reads `length`: the answer was cut short.
   */
  choices(): ChoiceResult[] {
    const out: ChoiceResult[] = [];
    for (let i = 0; i < Math.max(1, this.parts.length); i++) {
      const p = this.parts[i] ?? this.choice(i);
      const text = p.text.join('');
      const result: ChoiceResult = {
        text: text === '' && (p.toolCalls.length > 0 || p.refusal.length > 0) ? null : text,
        toolCalls: p.toolCalls.filter((c) => c !== undefined),
        finishReason: p.finishReason ?? 'length',
      };
      if (p.refusal.length > 0) result.refusal = p.refusal.join('');
      if (p.logprobs !== undefined) result.logprobs = { content: p.logprobs };
      out.push(result);
    }
    return out;
  }

  private choice(index: number): ChoiceParts {
    let parts = this.parts[index];
    if (parts === undefined) {
      parts = { text: [], refusal: [], toolCalls: [], finishReason: undefined, logprobs: undefined };
      this.parts[index] = parts;
    }
    return parts;
  }
}
