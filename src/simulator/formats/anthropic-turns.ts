/**
 * The messages of an Anthropic Messages request as turns: blocks checked by type and by the role that may
 * carry them, consecutive same-role messages combined into one turn (as the API combines them), the first
 * message a user message, and tool use paired across turns: each `tool_result` answers a `tool_use` of the
 * immediately preceding assistant turn, the results come first in their turn, and every `tool_use` is
 * answered in the next turn. Thinking blocks are checked as the API checks them (their signatures; the
 * thinking block a tool loop's final assistant turn must start with).
 *
 * @see https://docs.anthropic.com/en/api/messages#body-messages
 * @see https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use
 * @see https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking#extended-thinking-with-tool-use
 */
import type { ToolResult } from '../conversation.js';
import { emptyTally, type MediaTally } from '../media.js';
import { toolCallTokens, toolResultTokens } from '../prompt-tokens.js';
import {
  BLOCK_FIELDS,
  checkText,
  fail,
  noExtra,
  readDocument,
  readImage,
  readResultContent,
  readSystem,
  signThinking,
  THINKING_DOCS,
} from './anthropic-blocks.js';
import { isAbsent, isRecord } from './shared.js';

const TOOL_ID = /^[a-zA-Z0-9_-]+$/;

/** One block as read: what the turn checks need. */
interface Block {
  type: string;
  /** Message index and block index, for error paths. */
  message: number;
  index: number;
  id?: string;
  name?: string;
}

interface Turn {
  role: 'user' | 'assistant';
  /** Index of its first message. */
  first: number;
  blocks: Block[];
  /** Whether it holds text of its own (a string content or a text block). */
  text: boolean;
}

export interface Reading {
  media: MediaTally;
  messageTexts: string[];
  lastUserText: string;
  extra: number;
  turns: Turn[];
  /** tool_result blocks by message and index: their text. */
  resultTexts: Map<string, string>;
}

function readBlock(
  raw: unknown,
  i: number,
  j: number,
  role: 'user' | 'assistant',
  reading: Reading,
  texts: string[],
): Block {
  const at = `messages.${i}.content.${j}`;
  if (!isRecord(raw)) fail(`${at}: Input should be a valid dictionary`);
  const type = raw.type;
  const fields = typeof type === 'string' ? BLOCK_FIELDS[type] : undefined;
  if (!fields) {
    fail(
      `${at}: Input tag '${String(type)}' found using 'type' does not match any of the expected tags: ${Object.keys(
        BLOCK_FIELDS,
      )
        .map((t) => `'${t}'`)
        .join(', ')}`,
    );
  }
  noExtra(raw, fields, `${at}.${type}`);
  const block: Block = { type: type as string, message: i, index: j };
  const onlyIn = (wanted: 'user' | 'assistant') => {
    if (role !== wanted) fail(`${at}: \`${String(type)}\` blocks are only allowed in \`${wanted}\` messages`);
  };
  switch (type) {
    case 'text':
      texts.push(checkText(raw.text, `${at}.text`, 'messages'));
      break;
    case 'image':
      onlyIn('user');
      readImage(raw, `${at}.image`, reading.media);
      break;
    case 'document':
      onlyIn('user');
      readDocument(raw, `${at}.document`, reading.media);
      break;
    case 'tool_use': {
      onlyIn('assistant');
      if (typeof raw.id !== 'string' || !TOOL_ID.test(raw.id)) {
        fail(`${at}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'`);
      }
      if (typeof raw.name !== 'string' || raw.name.length === 0) fail(`${at}.tool_use.name: Field required`);
      if (!isRecord(raw.input)) fail(`${at}.tool_use.input: Input should be a valid dictionary`);
      block.id = raw.id;
      block.name = raw.name;
      reading.extra += toolCallTokens(raw.name, JSON.stringify(raw.input));
      break;
    }
    case 'tool_result': {
      onlyIn('user');
      if (typeof raw.tool_use_id !== 'string') fail(`${at}.tool_result.tool_use_id: Field required`);
      if (!isAbsent(raw.is_error) && typeof raw.is_error !== 'boolean') {
        fail(`${at}.tool_result.is_error: Input should be a valid boolean`);
      }
      const text = readResultContent(raw.content, `${at}.tool_result`, reading.media);
      block.id = raw.tool_use_id;
      reading.resultTexts.set(`${i}.${j}`, text);
      reading.extra += toolResultTokens(text);
      break;
    }
    case 'thinking':
      onlyIn('assistant');
      if (typeof raw.thinking !== 'string') fail(`${at}.thinking.thinking: Field required`);
      if (typeof raw.signature !== 'string') fail(`${at}.thinking.signature: Field required`);
      if (raw.signature !== signThinking(raw.thinking))
        fail(`${at}: Invalid \`signature\` in \`thinking\` block`);
      break;
    case 'redacted_thinking':
      onlyIn('assistant');
      if (typeof raw.data !== 'string') fail(`${at}.redacted_thinking.data: Field required`);
      break;
  }
  return block;
}

/**
 * `perTurnControl`: the `per-turn-control-…` beta is on, under which a message after the first may be a
 * system turn (text only): its text is part of the prompt; it is no turn of the conversation.
 */
export function readMessages(messages: unknown[], perTurnControl = false): Reading {
  const reading: Reading = {
    media: emptyTally(),
    messageTexts: [],
    lastUserText: '',
    extra: 0,
    turns: [],
    resultTexts: new Map(),
  };
  for (const [i, message] of messages.entries()) {
    if (!isRecord(message)) fail(`messages.${i}: Input should be a valid dictionary`);
    const { role, content } = message;
    if (role === 'system' && perTurnControl && i > 0) {
      // A system turn may set the effort from there on (`output_config.effort`).
      noExtra(message, ['role', 'content', 'output_config'], `messages.${i}`);
      const { output_config: config } = message;
      if (!isAbsent(config)) {
        if (!isRecord(config)) fail(`messages.${i}.output_config: Input should be a valid dictionary`);
        noExtra(config, ['effort'], `messages.${i}.output_config`);
      }
      reading.messageTexts.push(readSystem(content));
      continue;
    }
    if (role !== 'user' && role !== 'assistant') {
      fail(
        `messages.${i}.role: Input should be 'user' or 'assistant'${
          role === 'system' ? ' (use the top-level system parameter for a system prompt)' : ''
        }`,
      );
    }
    noExtra(message, ['role', 'content'], `messages.${i}`);
    if (i === 0 && role !== 'user') fail('messages: first message must use the "user" role');
    const finalAssistant = role === 'assistant' && i === messages.length - 1;
    const empty = content === '' || (Array.isArray(content) && content.length === 0);
    if (empty && !finalAssistant) {
      fail(
        `messages.${i}: all messages must have non-empty content except for the optional final assistant message`,
      );
    }
    const blocks: Block[] = [];
    const texts: string[] = [];
    if (typeof content === 'string') {
      texts.push(content);
    } else if (Array.isArray(content)) {
      for (const [j, raw] of content.entries()) blocks.push(readBlock(raw, i, j, role, reading, texts));
    } else {
      fail(`messages.${i}.content: Input should be a valid string or a list of content blocks`);
    }
    const text = texts.join('\n');
    reading.messageTexts.push(text);
    const onlyResults =
      blocks.length > 0 && texts.length === 0 && blocks.some((b) => b.type === 'tool_result');
    if (role === 'user' && !onlyResults) reading.lastUserText = text;
    const last = reading.turns.at(-1);
    if (last && last.role === role) {
      last.blocks.push(...blocks);
      last.text ||= texts.length > 0;
    } else {
      reading.turns.push({ role, first: i, blocks, text: texts.length > 0 });
    }
  }
  return reading;
}

/** Tool use across turns; returns the results of the last turn (null when it is not tool results alone). */
export function pairTools(reading: Reading): ToolResult[] | null {
  const { turns } = reading;
  let lastResults: ToolResult[] | null = null;
  for (const [t, turn] of turns.entries()) {
    if (turn.role !== 'user') continue;
    const previous = t > 0 ? turns[t - 1] : undefined;
    const uses = new Map<string, Block>();
    for (const b of previous?.blocks ?? []) if (b.type === 'tool_use' && b.id) uses.set(b.id, b);
    const results: ToolResult[] = [];
    let leading = true;
    const answered = new Set<string>();
    for (const b of turn.blocks) {
      if (b.type !== 'tool_result') {
        leading = false;
        continue;
      }
      const use = b.id === undefined ? undefined : uses.get(b.id);
      if (!use) {
        fail(
          `messages.${b.message}.content.${b.index}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${b.id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`,
        );
      }
      if (!leading) {
        const missing = uses.size - answered.size;
        fail(
          `messages.${b.message}: Did not find ${missing} \`tool_result\` block(s) at the beginning of this message. Messages following \`tool_use\` blocks must begin with a matching number of \`tool_result\` blocks.`,
        );
      }
      answered.add(use.id as string);
      results.push({
        name: use.name as string,
        text: reading.resultTexts.get(`${b.message}.${b.index}`) ?? '',
      });
    }
    const missing = [...uses.values()].filter((u) => !answered.has(u.id as string));
    if (missing.length > 0) {
      fail(
        `messages.${(missing[0] as Block).message}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing
          .map((u) => u.id)
          .join(
            ', ',
          )}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
      );
    }
    lastResults = results.length > 0 ? results : null;
  }
  // A last turn that also says something of its own is a user message, not tool results (as an OpenAI
  // user message after the tool messages is).
  const lastTurn = turns.at(-1);
  return lastTurn?.role === 'user' && !lastTurn.text ? lastResults : null;
}

/** Thinking blocks as the API checks them, thinking on or off. */
export function checkThinkingBlocks(reading: Reading, thinking: boolean, messageCount: number): void {
  const { turns } = reading;
  if (thinking) {
    const finalAssistant = [...turns].reverse().find((turn) => turn.role === 'assistant');
    if (finalAssistant?.blocks.some((b) => b.type === 'tool_use')) {
      const first = finalAssistant.blocks[0] as Block;
      if (first.type !== 'thinking' && first.type !== 'redacted_thinking') {
        fail(
          `messages.${first.message}.content.${first.index}.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${first.type}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable \`thinking\`. Please consult our documentation at ${THINKING_DOCS}`,
        );
      }
    }
    return;
  }
  const lastTurn = turns.at(-1);
  if (lastTurn?.role !== 'assistant') return;
  const thought = lastTurn.blocks.find(
    (b) => (b.type === 'thinking' || b.type === 'redacted_thinking') && b.message === messageCount - 1,
  );
  if (thought) {
    fail(
      `messages.${thought.message}.content.${thought.index}: When thinking is disabled, an \`assistant\` message in the final position cannot contain \`thinking\`. To use thinking blocks, enable \`thinking\` in your request.`,
    );
  }
}
