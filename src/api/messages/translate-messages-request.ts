import type { Config } from '../../config/index.js';
import { GatewayError } from '../../errors.js';
import type { ChatRequest } from '../../gateway/types.js';
import type {
  ChatMessage,
  ContentPart,
  ReasoningEffort,
  ToolCall,
  ToolChoice,
  ToolDefinition,
} from '../../providers/types.js';
import { invalidField } from './messages-error.js';

/** The smallest thinking budget Anthropic accepts, plus the one token `max_tokens` must exceed it by. */
const THINKING_FLOOR = 1025;

/**
 * Tool types that run on Anthropic's side and are billed per use apart from tokens (web search, code
 * execution, …): Tollgate cannot bill them, so they are refused. Client tools (`custom`, `bash_…`,
 * `text_editor_…`, `computer_…`, `memory_…`) run on the caller's side and are accepted.
 */
const CLIENT_TOOL_TYPE = /^(custom|bash_\d+|text_editor_\d+|computer_\d+|memory_\d+)$/;

/**
 * `anthropic-beta` values passed to an Anthropic upstream: features that change neither the price nor
 * who runs a tool. Others are left out and named in `x-tollgate-dropped-params` (`context-1m-…` among
 * them: it bills long prompts at a higher price than the catalog's).
 */
const ALLOWED_BETA =
  /^(prompt-caching|interleaved-thinking|fine-grained-tool-streaming|token-efficient-tools|context-management|claude-code|output-128k|extended-cache-ttl|per-turn-control|mid-conversation-tool-changes|thinking-token-count|effort|advanced-tool-use)-\d{4}-\d{2}-\d{2}$/;

/** A Messages request, translated: the neutral call, and what only an Anthropic upstream gets. */
export interface MessagesRequest {
  chat: ChatRequest;
  /** Request fields only an Anthropic upstream can carry: named as dropped when another serves. */
  droppedElsewhere: string[];
  /** `anthropic-beta` values left out for every upstream. */
  droppedBetas: string[];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function text(value: unknown, param: string): string {
  if (typeof value !== 'string') throw invalidField(param, 'must be a string');
  return value;
}

function optionalNumber(
  body: Record<string, unknown>,
  field: string,
  min: number,
  max: number,
): number | undefined {
  const value = body[field];
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    throw invalidField(field, `must be a number from ${min} to ${max}`);
  }
  return value;
}

/** The betas of the `anthropic-beta` header(s): allowed ones kept, the rest named. */
export function readBetas(header: string | string[] | undefined): { allowed: string[]; dropped: string[] } {
  const values = (Array.isArray(header) ? header.join(',') : (header ?? ''))
    .split(',')
    .map((v) => v.trim())
    .filter((v) => v !== '');
  const allowed: string[] = [];
  const dropped: string[] = [];
  for (const value of new Set(values)) (ALLOWED_BETA.test(value) ? allowed : dropped).push(value);
  return { allowed, dropped };
}

/** The text of a `tool_result`'s content (a string, or text blocks; other blocks counted as uncarried). */
function toolResultText(content: unknown, param: string, tally: { bytes: number }): string {
  if (content === undefined) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw invalidField(param, 'must be a string or an array of content blocks');
  const texts: string[] = [];
  for (const block of content) {
    if (isRecord(block) && block.type === 'text' && typeof block.text === 'string') texts.push(block.text);
    else tally.bytes += Buffer.byteLength(JSON.stringify(block), 'utf8');
  }
  return texts.join('\n');
}

/** An image or document block as a neutral content part, or undefined when it has no neutral form. */
function mediaPart(block: Record<string, unknown>, param: string): ContentPart | undefined {
  const { source } = block;
  if (!isRecord(source)) throw invalidField(`${param}.source`, 'must be an object');
  if (block.type === 'image') {
    if (source.type === 'base64') {
      return {
        type: 'image',
        image: {
          kind: 'data',
          mediaType: text(source.media_type, `${param}.source.media_type`),
          data: text(source.data, `${param}.source.data`),
        },
        detail: undefined,
      };
    }
    if (source.type === 'url') {
      return {
        type: 'image',
        image: { kind: 'url', url: text(source.url, `${param}.source.url`) },
        detail: undefined,
      };
    }
    return undefined;
  }
  if (source.type === 'base64') {
    return {
      type: 'file',
      data: text(source.data, `${param}.source.data`),
      mediaType: text(source.media_type, `${param}.source.media_type`),
      fileId: undefined,
      filename: undefined,
    };
  }
  if (source.type === 'text') return { type: 'text', text: text(source.data, `${param}.source.data`) };
  return undefined;
}

interface Translated {
  messages: ChatMessage[];
  /** Bytes of blocks the neutral messages do not carry (thinking, and anything without a neutral form). */
  uncarriedBytes: number;
  dropped: Set<string>;
}

/** A system prompt's text: a string, or text blocks (their `cache_control` named as dropped). */
function systemText(value: unknown, param: string, dropped: Set<string>): string {
  if (typeof value === 'string') return value;
  if (!Array.isArray(value)) throw invalidField(param, 'must be a string or an array of text blocks');
  return value
    .map((block, i) => {
      if (!isRecord(block) || block.type !== 'text')
        throw invalidField(`${param}[${i}]`, 'must be a text block');
      if (block.cache_control !== undefined) dropped.add('cache_control');
      return text(block.text, `${param}[${i}].text`);
    })
    .join('\n');
}

/** Anthropic's `system` and `messages` as neutral messages. */
function translateConversation(body: Record<string, unknown>, maxMessages: number): Translated {
  const out: Translated = { messages: [], uncarriedBytes: 0, dropped: new Set() };
  const tally = { bytes: 0 };
  if (body.system !== undefined) {
    const system = systemText(body.system, 'system', out.dropped);
    if (system !== '') out.messages.push({ role: 'system', content: system });
  }

  const { messages } = body;
  if (!Array.isArray(messages) || messages.length === 0) {
    throw new GatewayError('invalid_messages', 'messages: must be a non-empty array', { param: 'messages' });
  }
  if (messages.length > maxMessages) {
    throw new GatewayError('invalid_messages', `messages: at most ${maxMessages} messages are accepted`, {
      param: 'messages',
    });
  }
  const toolNames = new Map<string, string>();
  for (const [i, message] of messages.entries()) {
    const param = `messages[${i}]`;
    if (!isRecord(message)) throw invalidField(param, 'must be an object');
    const { role, content } = message;
    if (role === 'system') {
      // A system turn in the conversation (Claude Code's reminders): text only, kept where it stands.
      if (i === 0) throw invalidField(`${param}.role`, 'the first message must be "user"');
      out.messages.push({ role: 'system', content: systemText(content, `${param}.content`, out.dropped) });
      if (message.output_config !== undefined) out.dropped.add('output_config');
      continue;
    }
    if (role !== 'user' && role !== 'assistant')
      throw invalidField(`${param}.role`, 'must be "user", "assistant" or "system"');
    if (typeof content === 'string') {
      out.messages.push({ role, content });
      continue;
    }
    if (!Array.isArray(content))
      throw invalidField(`${param}.content`, 'must be a string or an array of content blocks');
    const texts: string[] = [];
    const parts: ContentPart[] = [];
    const toolCalls: ToolCall[] = [];
    const toolResults: ChatMessage[] = [];
    for (const [j, block] of content.entries()) {
      const at = `${param}.content[${j}]`;
      if (!isRecord(block) || typeof block.type !== 'string')
        throw invalidField(at, 'must be a content block with a type');
      if (block.cache_control !== undefined) out.dropped.add('cache_control');
      switch (block.type) {
        case 'text': {
          const value = text(block.text, `${at}.text`);
          texts.push(value);
          parts.push({ type: 'text', text: value });
          break;
        }
        case 'image':
        case 'document': {
          if (role !== 'user') throw invalidField(at, `a ${block.type} block belongs in a user message`);
          const part = mediaPart(block, at);
          if (part === undefined) {
            tally.bytes += Buffer.byteLength(JSON.stringify(block), 'utf8');
            out.dropped.add(block.type);
          } else parts.push(part);
          break;
        }
        case 'tool_use': {
          if (role !== 'assistant')
            throw invalidField(at, 'a tool_use block belongs in an assistant message');
          const id = text(block.id, `${at}.id`);
          const name = text(block.name, `${at}.name`);
          if (!isRecord(block.input)) throw invalidField(`${at}.input`, 'must be an object');
          toolNames.set(id, name);
          toolCalls.push({ id, name, arguments: JSON.stringify(block.input) });
          break;
        }
        case 'tool_result': {
          if (role !== 'user') throw invalidField(at, 'a tool_result block belongs in a user message');
          const id = text(block.tool_use_id, `${at}.tool_use_id`);
          const name = toolNames.get(id);
          if (name === undefined)
            throw invalidField(`${at}.tool_use_id`, 'names no tool_use of an earlier assistant message');
          toolResults.push({
            role: 'tool',
            toolCallId: id,
            name,
            content: toolResultText(block.content, `${at}.content`, tally),
          });
          break;
        }
        case 'thinking':
        case 'redacted_thinking':
          // Read again by an Anthropic upstream (in a tool loop); other formats have no place for it.
          tally.bytes += Buffer.byteLength(JSON.stringify(block), 'utf8');
          out.dropped.add('thinking');
          break;
        default:
          tally.bytes += Buffer.byteLength(JSON.stringify(block), 'utf8');
          out.dropped.add(block.type);
      }
    }
    if (role === 'assistant') {
      const said = texts.join('');
      if (said === '' && toolCalls.length === 0) continue;
      out.messages.push(
        toolCalls.length > 0
          ? { role, content: said === '' ? null : said, toolCalls }
          : { role, content: said },
      );
      continue;
    }
    out.messages.push(...toolResults);
    if (parts.length === 0) continue;
    const onlyText = parts.every((part) => part.type === 'text');
    out.messages.push({ role: 'user', content: onlyText ? texts.join('\n') : parts });
  }
  out.uncarriedBytes = tally.bytes;
  return out;
}

function translateTools(body: Record<string, unknown>): ToolDefinition[] | undefined {
  const { tools } = body;
  if (tools === undefined) return undefined;
  if (!Array.isArray(tools)) throw invalidField('tools', 'must be an array');
  return tools.map((tool, i): ToolDefinition => {
    if (!isRecord(tool)) throw invalidField(`tools[${i}]`, 'must be an object');
    if (tool.type !== undefined && !(typeof tool.type === 'string' && CLIENT_TOOL_TYPE.test(tool.type))) {
      throw new GatewayError(
        'unsupported_parameter',
        `tools[${i}].type: the server tool "${String(tool.type).slice(0, 60)}" is billed by the upstream apart from tokens, which Tollgate cannot charge; only client tools are accepted.`,
        { param: `tools[${i}].type` },
      );
    }
    const definition: ToolDefinition = { name: text(tool.name, `tools[${i}].name`) };
    if (tool.description !== undefined)
      definition.description = text(tool.description, `tools[${i}].description`);
    if (isRecord(tool.input_schema)) definition.parameters = tool.input_schema;
    return definition;
  });
}

function translateToolChoice(body: Record<string, unknown>): {
  choice: ToolChoice | undefined;
  parallel: boolean | undefined;
} {
  const { tool_choice: choice } = body;
  if (choice === undefined) return { choice: undefined, parallel: undefined };
  if (!isRecord(choice)) throw invalidField('tool_choice', 'must be an object');
  const parallel = choice.disable_parallel_tool_use === true ? false : undefined;
  switch (choice.type) {
    case 'auto':
      return { choice: { type: 'auto' }, parallel };
    case 'any':
      return { choice: { type: 'required' }, parallel };
    case 'none':
      return { choice: { type: 'none' }, parallel };
    case 'tool':
      return { choice: { type: 'function', name: text(choice.name, 'tool_choice.name') }, parallel };
  }
  throw invalidField('tool_choice.type', 'must be "auto", "any", "tool" or "none"');
}

/** A thinking budget as the reasoning effort other formats understand (the nearest budget at or above). */
function effortOf(budget: number): ReasoningEffort {
  if (budget <= 1024) return 'low';
  if (budget <= 4096) return 'medium';
  if (budget <= 16_384) return 'high';
  return 'xhigh';
}

/**
 * A Messages request body (`POST /api/v1/messages`) as the neutral call. The conversation, tools and
 * sampling settings are translated for every upstream; the body itself rides along
 * (`ChatRequest.anthropic`) for an Anthropic upstream, which receives it as sent. `max_tokens` is a ceiling
 * the hold may lower (docs/api.md, "Anthropic Messages").
 */
export function translateMessagesRequest(
  raw: unknown,
  betasHeader: string | string[] | undefined,
  config: Pick<Config, 'maxMessages' | 'maxTokensCeiling' | 'streaming' | 'minCompletionTokens'>,
): MessagesRequest {
  if (!isRecord(raw)) throw new GatewayError('invalid_request', 'The request body must be a JSON object.');
  const body = raw;
  if (typeof body.model !== 'string' || body.model === '')
    throw invalidField('model', 'is required (a string)');
  const maxTokens = body.max_tokens;
  if (
    typeof maxTokens !== 'number' ||
    !Number.isInteger(maxTokens) ||
    maxTokens < 1 ||
    maxTokens > config.maxTokensCeiling
  ) {
    throw invalidField('max_tokens', `is required: an integer from 1 to ${config.maxTokensCeiling}`);
  }
  const stream = body.stream;
  if (stream !== undefined && typeof stream !== 'boolean') throw invalidField('stream', 'must be a boolean');
  if (stream === true && !config.streaming) {
    throw new GatewayError(
      'streaming_not_supported',
      'Streaming is turned off on this gateway (STREAMING=off); send stream: false.',
      {
        param: 'stream',
      },
    );
  }
  const conversation = translateConversation(body, config.maxMessages);
  const dropped = conversation.dropped;
  const temperature = optionalNumber(body, 'temperature', 0, 1);
  const topP = optionalNumber(body, 'top_p', 0, 1);
  if (body.top_k !== undefined) dropped.add('top_k');
  const stop = body.stop_sequences;
  if (stop !== undefined && (!Array.isArray(stop) || !stop.every((s) => typeof s === 'string'))) {
    throw invalidField('stop_sequences', 'must be an array of strings');
  }
  const { metadata } = body;
  if (metadata !== undefined && !isRecord(metadata)) throw invalidField('metadata', 'must be an object');
  const user = metadata?.user_id;

  let reasoningEffort: ReasoningEffort | undefined;
  let floor = 1;
  const { thinking } = body;
  if (thinking !== undefined) {
    if (!isRecord(thinking)) throw invalidField('thinking', 'must be an object');
    if (thinking.type === 'enabled') {
      const budget = thinking.budget_tokens;
      if (typeof budget !== 'number' || !Number.isInteger(budget) || budget < 1024) {
        throw invalidField('thinking.budget_tokens', 'must be an integer of at least 1024');
      }
      reasoningEffort = effortOf(budget);
      floor = THINKING_FLOOR;
    }
  }
  for (const field of ['context_management', 'output_config', 'container', 'mcp_servers', 'service_tier']) {
    if (body[field] !== undefined) dropped.add(field);
  }
  const { choice, parallel } = translateToolChoice(body);
  const betas = readBetas(betasHeader);
  const chat: ChatRequest = {
    model: body.model,
    provider: undefined,
    maxTokens,
    // Never above the caller's cap; never below what thinking needs, nor MIN_COMPLETION_TOKENS.
    maxTokensFloor: Math.min(maxTokens, Math.max(floor, config.minCompletionTokens)),
    legacyFunctions: false,
    messages: conversation.messages,
    params: {
      ...(temperature === undefined ? {} : { temperature }),
      ...(topP === undefined ? {} : { top_p: topP }),
      ...(stop === undefined ? {} : { stop: stop as string[] }),
      ...(typeof user === 'string' ? { user } : {}),
    },
    tools: translateTools(body),
    toolChoice: choice,
    parallelToolCalls: parallel,
    responseFormat: undefined,
    n: 1,
    logprobs: undefined,
    reasoningEffort,
    openai: {},
    anthropic: { body, betas: betas.allowed },
    uncarriedPromptBytes: conversation.uncarriedBytes,
  };
  if (stream === true) chat.stream = { includeUsage: true };
  return { chat, droppedElsewhere: [...dropped], droppedBetas: betas.dropped };
}
