/**
 * Reads and validates an Anthropic Messages request as the Messages API does: fields it does not know are
 * refused ("Extra inputs are not permitted"); tools, tool choice, output format and sampling are checked
 * here, content blocks in `anthropic-blocks.ts`, turns and tool pairing in `anthropic-turns.ts`. Extended
 * thinking is checked as documented (budget, forced tools, sampling). Error texts follow Anthropic's where
 * known.
 *
 * @see https://docs.anthropic.com/en/api/messages
 * @see https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use
 * @see https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking
 * @see https://docs.anthropic.com/en/docs/build-with-claude/structured-outputs
 */
import type { OutputFormat, ToolSpec, ToolUse } from '../conversation.js';
import { toolsTokens } from '../prompt-tokens.js';
import { promptTokens } from '../reply.js';
import {
  AnthropicInvalid,
  fail,
  noExtra,
  readSystem,
  THINKING_DOCS,
  THINKING_TOKENS,
} from './anthropic-blocks.js';
import { checkThinkingBlocks, pairTools, readMessages } from './anthropic-turns.js';
import {
  type Conversation,
  isAbsent,
  isInt,
  isNumberIn,
  isPositiveInt,
  isRecord,
  isStringArray,
  type Rejection,
  reject,
} from './shared.js';

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

const TOP_LEVEL = new Set([
  'model',
  'messages',
  'max_tokens',
  'metadata',
  'stop_sequences',
  'stream',
  'system',
  'temperature',
  'top_k',
  'top_p',
  'tools',
  'tool_choice',
  'thinking',
  'output_config',
  'service_tier',
  'container',
  'inference_geo',
  'cache_control',
  'context_management',
]);

/** Whether the `anthropic-beta` header turns `feature` on (any dated version of it). */
function betaOn(betas: string, feature: string): boolean {
  return betas.split(',').some((beta) => beta.trim().startsWith(`${feature}-`));
}

/** `context_management` (beta `context-management-…`): a list of edits, each with its type. */
function readContextManagement(value: unknown, betas: string): void {
  if (isAbsent(value)) return;
  if (!betaOn(betas, 'context-management')) {
    fail('context_management: Extra inputs are not permitted (it needs the context-management beta)');
  }
  if (!isRecord(value)) fail('context_management: Input should be a valid dictionary');
  noExtra(value, ['edits'], 'context_management');
  if (!isAbsent(value.edits)) {
    if (!Array.isArray(value.edits)) fail('context_management.edits: Input should be a valid list');
    for (const [i, edit] of value.edits.entries()) {
      if (!isRecord(edit) || typeof edit.type !== 'string')
        fail(`context_management.edits.${i}.type: Field required`);
    }
  }
}

const TOOL_FIELDS = [
  'type',
  'name',
  'description',
  'input_schema',
  'cache_control',
  'strict',
  'input_examples',
  'defer_loading',
  'allowed_callers',
  'eager_input_streaming',
];

function readTools(tools: unknown): ToolSpec[] {
  if (isAbsent(tools)) return [];
  if (!Array.isArray(tools)) fail('tools: Input should be a valid list');
  const seen = new Set<string>();
  return tools.map((tool, i) => {
    if (!isRecord(tool)) fail(`tools.${i}: Input should be a valid dictionary`);
    if (!isAbsent(tool.type) && tool.type !== 'custom') {
      fail(`tools.${i}: the simulator knows only client tools (type 'custom'), not '${String(tool.type)}'`);
    }
    const at = `tools.${i}.custom`;
    noExtra(tool, TOOL_FIELDS, at);
    if (typeof tool.name !== 'string') fail(`${at}.name: Field required`);
    if (!TOOL_NAME.test(tool.name)) fail(`${at}.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'`);
    if (seen.has(tool.name)) fail('tools: Tool names must be unique.');
    seen.add(tool.name);
    if (!isAbsent(tool.description) && typeof tool.description !== 'string') {
      fail(`${at}.description: Input should be a valid string`);
    }
    if (!isRecord(tool.input_schema)) fail(`${at}.input_schema: Field required`);
    if (tool.input_schema.type !== 'object') fail(`${at}.input_schema.type: Input should be 'object'`);
    if (!isAbsent(tool.strict) && typeof tool.strict !== 'boolean')
      fail(`${at}.strict: Input should be a valid boolean`);
    return { name: tool.name, schema: tool.input_schema };
  });
}

function readToolChoice(
  choice: unknown,
  tools: ToolSpec[],
): { use: ToolUse; parallel: boolean; forced: boolean } {
  if (isAbsent(choice)) return { use: { kind: 'auto' }, parallel: true, forced: false };
  if (!isRecord(choice)) fail('tool_choice: Input should be a valid dictionary');
  const type = choice.type;
  const known: Record<string, string[]> = {
    auto: ['type', 'disable_parallel_tool_use'],
    any: ['type', 'disable_parallel_tool_use'],
    tool: ['type', 'name', 'disable_parallel_tool_use'],
    none: ['type'],
  };
  const fields = typeof type === 'string' ? known[type] : undefined;
  if (!fields) {
    fail(
      `tool_choice: Input tag '${String(type)}' found using 'type' does not match any of the expected tags: 'auto', 'any', 'tool', 'none'`,
    );
  }
  noExtra(choice, fields, `tool_choice.${type}`);
  const disable = choice.disable_parallel_tool_use;
  if (!isAbsent(disable) && typeof disable !== 'boolean') {
    fail(`tool_choice.${type}.disable_parallel_tool_use: Input should be a valid boolean`);
  }
  const parallel = disable !== true;
  if ((type === 'any' || type === 'tool') && tools.length === 0) {
    fail('tool_choice: tool_choice may only be specified while providing tools');
  }
  switch (type) {
    case 'none':
      return { use: { kind: 'none' }, parallel, forced: false };
    case 'any':
      return { use: { kind: 'required' }, parallel, forced: true };
    case 'tool': {
      if (typeof choice.name !== 'string') fail('tool_choice.tool.name: Field required');
      const name = choice.name;
      if (!tools.some((t) => t.name === name))
        fail(`tool_choice.tool.name: Tool '${name}' not found in the provided tools`);
      return { use: { kind: 'only', names: [name] }, parallel, forced: true };
    }
    default:
      return { use: { kind: 'auto' }, parallel, forced: false };
  }
}

/** `thinking`: whether it is on (enabled or adaptive). */
function readThinking(thinking: unknown, maxTokens: number): boolean {
  if (isAbsent(thinking)) return false;
  if (!isRecord(thinking)) fail('thinking: Input should be a valid dictionary');
  switch (thinking.type) {
    case 'disabled':
      noExtra(thinking, ['type'], 'thinking.disabled');
      return false;
    case 'adaptive':
      noExtra(thinking, ['type', 'display'], 'thinking.adaptive');
      return true;
    case 'enabled': {
      noExtra(thinking, ['type', 'budget_tokens', 'display'], 'thinking.enabled');
      const budget = thinking.budget_tokens;
      if (budget === undefined) fail('thinking.enabled.budget_tokens: Field required');
      if (!isInt(budget)) fail('thinking.enabled.budget_tokens: Input should be a valid integer');
      if (budget < 1024)
        fail('thinking.enabled.budget_tokens: Input should be greater than or equal to 1024');
      if (maxTokens <= budget) {
        fail(
          `\`max_tokens\` must be greater than \`thinking.budget_tokens\`. Please consult our documentation at ${THINKING_DOCS}#max-tokens-and-context-window-size`,
        );
      }
      return true;
    }
    default:
      fail(
        `thinking: Input tag '${String(thinking.type)}' found using 'type' does not match any of the expected tags: 'enabled', 'disabled', 'adaptive'`,
      );
  }
}

function readOutputConfig(config: unknown): OutputFormat {
  if (isAbsent(config)) return { kind: 'text' };
  if (!isRecord(config)) fail('output_config: Input should be a valid dictionary');
  noExtra(config, ['effort', 'format'], 'output_config');
  if (
    !isAbsent(config.effort) &&
    !['low', 'medium', 'high', 'xhigh', 'max'].includes(config.effort as string)
  ) {
    fail("output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'");
  }
  const format = config.format;
  if (isAbsent(format)) return { kind: 'text' };
  if (!isRecord(format) || format.type !== 'json_schema')
    fail("output_config.format.type: Input should be 'json_schema'");
  noExtra(format, ['type', 'schema'], 'output_config.format');
  if (!isRecord(format.schema)) fail('output_config.format.schema: Field required');
  return { kind: 'json_schema', schema: format.schema };
}

function checkSampling(body: Record<string, unknown>, thinking: boolean, forced: boolean): void {
  if (!isAbsent(body.temperature) && !isNumberIn(body.temperature, 0, 1)) {
    fail('temperature: Input should be less than or equal to 1 and greater than or equal to 0');
  }
  if (!isAbsent(body.top_p) && !isNumberIn(body.top_p, 0, 1)) {
    fail('top_p: Input should be less than or equal to 1 and greater than or equal to 0');
  }
  if (!isAbsent(body.top_k) && !(isInt(body.top_k) && body.top_k >= 0)) {
    fail('top_k: Input should be greater than or equal to 0');
  }
  if (!thinking) return;
  if (forced) fail('Thinking may not be enabled when tool_choice forces tool use.');
  const docs = `Please consult our documentation at ${THINKING_DOCS}#important-considerations-when-using-extended-thinking`;
  if (!isAbsent(body.temperature) && body.temperature !== 1) {
    fail(`\`temperature\` may only be set to 1 when thinking is enabled or in adaptive mode. ${docs}`);
  }
  if (!isAbsent(body.top_p) && (body.top_p as number) < 0.95) {
    fail(`\`top_p\` must be greater than or equal to 0.95 or unset when thinking is enabled. ${docs}`);
  }
  if (!isAbsent(body.top_k)) fail(`\`top_k\` must be unset when thinking is enabled. ${docs}`);
}

function parseOrThrow(body: unknown, betas: string): Conversation {
  if (!isRecord(body)) fail('The request body must be a JSON object.');
  if (typeof body.model !== 'string' || body.model.length === 0) fail('model: Field required (string)');
  if (body.max_tokens === undefined) fail('max_tokens: Field required');
  if (!isPositiveInt(body.max_tokens)) fail('max_tokens: must be a positive integer');
  const maxTokens = body.max_tokens;
  noExtra(body, TOP_LEVEL, '');
  const { messages } = body;
  if (!Array.isArray(messages) || messages.length === 0) fail('messages: must be a non-empty array');
  // `stream` is read by the streamer (anthropic-stream.ts).
  let stops: string[] = [];
  if (isStringArray(body.stop_sequences)) stops = body.stop_sequences;
  else if (body.stop_sequences !== undefined) fail('stop_sequences: must be an array of strings');
  if (!isAbsent(body.metadata)) {
    if (!isRecord(body.metadata)) fail('metadata: Input should be a valid dictionary');
    noExtra(body.metadata, ['user_id'], 'metadata');
    const user = body.metadata.user_id;
    if (!isAbsent(user) && typeof user !== 'string') fail('metadata.user_id: Input should be a valid string');
  }
  const system = isAbsent(body.system) ? null : readSystem(body.system);
  const tools = readTools(body.tools);
  const choice = readToolChoice(body.tool_choice, tools);
  const thinking = readThinking(body.thinking, maxTokens);
  checkSampling(body, thinking, choice.forced);
  const output = readOutputConfig(body.output_config);
  readContextManagement(body.context_management, betas);

  const reading = readMessages(messages, betaOn(betas, 'per-turn-control'));
  const toolResults = pairTools(reading);
  checkThinkingBlocks(reading, thinking, messages.length);
  return {
    model: body.model,
    messageTexts: system === null ? reading.messageTexts : [system, ...reading.messageTexts],
    lastUserText: reading.lastUserText,
    cap: maxTokens,
    stops,
    extraPromptTokens: reading.extra + reading.media.tokens + toolsTokens(body.tools),
    tools,
    toolUse: choice.use,
    parallelToolCalls: choice.parallel,
    toolResults,
    media: reading.media,
    output,
    n: 1,
    logprobs: null,
    reasoningTokens: thinking ? THINKING_TOKENS : 0,
    leadText: choice.use.kind === 'auto',
    showThoughts: false,
  };
}

/** The fields `POST /v1/messages/count_tokens` takes: a Messages request without its output settings. */
const COUNT_FIELDS = [
  'model',
  'messages',
  'system',
  'tools',
  'tool_choice',
  'thinking',
  'context_management',
  'output_config',
  'mcp_servers',
];

/**
 * The prompt tokens of a count_tokens request — what a completion of the same request reports as its
 * prompt — or why the API would refuse it.
 */
export function countAnthropicTokens(body: unknown, betas = ''): number | Rejection {
  try {
    if (!isRecord(body)) fail('The request body must be a JSON object.');
    noExtra(body, COUNT_FIELDS, '');
    // Read as the completion it counts (max_tokens only has to leave a thinking budget room).
    const conv = parseOrThrow({ ...body, max_tokens: 1_000_000 }, betas);
    return promptTokens(conv.messageTexts) + conv.extraPromptTokens;
  } catch (err) {
    if (err instanceof AnthropicInvalid) return reject(err.message);
    throw err;
  }
}

/**
 * The conversation of a Messages request, or why the Messages API would refuse it. `betas`: the
 * `anthropic-beta` header ('' without one); `context_management` and system turns need theirs.
 */
export function parseAnthropicRequest(body: unknown, betas = ''): Conversation | Rejection {
  try {
    return parseOrThrow(body, betas);
  } catch (err) {
    if (err instanceof AnthropicInvalid) return reject(err.message);
    throw err;
  }
}
