/**
 * Reads and validates an OpenAI-compatible Chat Completions request as OpenAI does: tool definitions
 * and choice, response formats, `n`, log probabilities, reasoning effort and sampling fields here; the
 * messages (content parts, tool-call pairing) in `openai-messages.ts`. Fields it does not know are
 * ignored, as OpenAI-compatible hosts do. Error texts follow OpenAI's where known.
 *
 * @see https://platform.openai.com/docs/api-reference/chat/create
 * @see https://platform.openai.com/docs/guides/function-calling
 * @see https://platform.openai.com/docs/guides/structured-outputs
 */
import type { OutputFormat, ToolSpec, ToolUse } from '../conversation.js';
import { toolsTokens } from '../prompt-tokens.js';
import { DEFAULT_CAP } from '../reply.js';
import { fail, OpenAIInvalid, readMessages } from './openai-messages.js';
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

/** Function and schema names: OpenAI's pattern. */
const NAME = /^[a-zA-Z0-9_-]{1,64}$/;
/** Reasoning tokens per `reasoning_effort`. */
export const REASONING_TOKENS: Readonly<Record<string, number>> = Object.freeze({
  none: 0,
  minimal: 0,
  low: 16,
  medium: 32,
  high: 64,
  xhigh: 128,
  max: 256,
});

function readTools(tools: unknown): ToolSpec[] {
  if (isAbsent(tools)) return [];
  if (!Array.isArray(tools)) fail("Invalid 'tools': expected an array.", 'tools');
  if (tools.length === 0) {
    fail(
      "Invalid 'tools': empty array. Expected an array with minimum length 1, but got an empty array instead.",
      'tools',
    );
  }
  return tools.map((tool, i) => {
    const at = `tools[${i}]`;
    if (!isRecord(tool)) fail(`Invalid '${at}': expected an object.`, at);
    if (tool.type !== 'function') {
      fail(`Invalid value: '${String(tool.type)}'. Supported values are: 'function'.`, `${at}.type`);
    }
    const fn = tool.function;
    if (!isRecord(fn) || typeof fn.name !== 'string') {
      fail(`Missing required parameter: '${at}.function.name'.`, `${at}.function.name`);
    }
    if (!NAME.test(fn.name)) {
      fail(
        `Invalid '${at}.function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]{1,64}$'.`,
        `${at}.function.name`,
      );
    }
    if (!isAbsent(fn.description) && typeof fn.description !== 'string') {
      fail(`Invalid '${at}.function.description': expected a string.`, `${at}.function.description`);
    }
    if (!isAbsent(fn.parameters) && !isRecord(fn.parameters)) {
      fail(
        `Invalid '${at}.function.parameters': expected an object (a JSON Schema).`,
        `${at}.function.parameters`,
      );
    }
    if (!isAbsent(fn.strict) && typeof fn.strict !== 'boolean') {
      fail(`Invalid '${at}.function.strict': expected a boolean.`, `${at}.function.strict`);
    }
    return { name: fn.name, schema: fn.parameters ?? undefined };
  });
}

function readToolChoice(choice: unknown, tools: ToolSpec[]): ToolUse {
  if (isAbsent(choice)) return { kind: 'auto' };
  if (tools.length === 0) {
    fail(
      "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
      'tool_choice',
    );
  }
  const known = (name: unknown, param: string): string => {
    if (typeof name !== 'string') fail(`Missing required parameter: '${param}'.`, param);
    if (!tools.some((t) => t.name === name)) {
      fail(`Invalid value for 'tool_choice': function '${name}' is not among the 'tools'.`, param);
    }
    return name;
  };
  if (choice === 'auto' || choice === 'none' || choice === 'required') return { kind: choice };
  if (isRecord(choice) && choice.type === 'function') {
    const fn = isRecord(choice.function) ? choice.function : {};
    return { kind: 'only', names: [known(fn.name, 'tool_choice.function.name')] };
  }
  if (isRecord(choice) && choice.type === 'allowed_tools' && isRecord(choice.allowed_tools)) {
    const { mode, tools: allowed } = choice.allowed_tools;
    if (mode !== 'auto' && mode !== 'required') {
      fail(
        `Invalid value: '${String(mode)}'. Supported values are: 'auto' and 'required'.`,
        'tool_choice.allowed_tools.mode',
      );
    }
    if (!Array.isArray(allowed) || allowed.length === 0) {
      fail(
        "Invalid 'tool_choice.allowed_tools.tools': expected a non-empty array.",
        'tool_choice.allowed_tools.tools',
      );
    }
    const names = allowed.map((t, j) =>
      known(
        isRecord(t) && isRecord(t.function) ? t.function.name : undefined,
        `tool_choice.allowed_tools.tools[${j}].function.name`,
      ),
    );
    return { kind: 'only', names };
  }
  fail(
    "Invalid value for 'tool_choice': expected 'none', 'auto', 'required', or {type: 'function', function: {name}}.",
    'tool_choice',
  );
}

function readResponseFormat(format: unknown, messageTexts: readonly string[]): OutputFormat {
  if (isAbsent(format)) return { kind: 'text' };
  if (!isRecord(format)) fail("Invalid 'response_format': expected an object.", 'response_format');
  switch (format.type) {
    case 'text':
      return { kind: 'text' };
    case 'json_object':
      if (!messageTexts.some((text) => /json/i.test(text))) {
        fail(
          "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.",
          'messages',
        );
      }
      return { kind: 'json_object' };
    case 'json_schema': {
      const spec = format.json_schema;
      if (!isRecord(spec)) {
        fail("Missing required parameter: 'response_format.json_schema'.", 'response_format.json_schema');
      }
      if (typeof spec.name !== 'string') {
        fail(
          "Missing required parameter: 'response_format.json_schema.name'.",
          'response_format.json_schema.name',
        );
      }
      if (!NAME.test(spec.name)) {
        fail(
          "Invalid 'response_format.json_schema.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]{1,64}$'.",
          'response_format.json_schema.name',
        );
      }
      if (!isAbsent(spec.schema) && !isRecord(spec.schema)) {
        fail(
          "Invalid 'response_format.json_schema.schema': expected an object.",
          'response_format.json_schema.schema',
        );
      }
      if (!isAbsent(spec.strict) && typeof spec.strict !== 'boolean') {
        fail(
          "Invalid 'response_format.json_schema.strict': expected a boolean.",
          'response_format.json_schema.strict',
        );
      }
      return { kind: 'json_schema', schema: spec.schema ?? undefined };
    }
    default:
      fail(
        `Invalid value: '${String(format.type)}'. Supported values are: 'text', 'json_object', and 'json_schema'.`,
        'response_format.type',
      );
  }
}

/** Sampling and bookkeeping fields: type and range only. */
function checkScalars(body: Record<string, unknown>): void {
  const ranges: [string, number, number][] = [
    ['temperature', 0, 2],
    ['top_p', 0, 1],
    ['presence_penalty', -2, 2],
    ['frequency_penalty', -2, 2],
  ];
  for (const [field, min, max] of ranges) {
    const value = body[field];
    if (!isAbsent(value) && !isNumberIn(value, min, max)) {
      fail(`Invalid '${field}': expected a number between ${min} and ${max}.`, field);
    }
  }
  if (!isAbsent(body.seed) && !isInt(body.seed)) fail("Invalid 'seed': expected an integer.", 'seed');
  if (!isAbsent(body.user) && typeof body.user !== 'string')
    fail("Invalid 'user': expected a string.", 'user');
  if (!isAbsent(body.logit_bias)) {
    const bias = body.logit_bias;
    if (!isRecord(bias) || !Object.values(bias).every((v) => isNumberIn(v, -100, 100))) {
      fail(
        "Invalid 'logit_bias': expected an object of token ids to numbers between -100 and 100.",
        'logit_bias',
      );
    }
  }
  if (!isAbsent(body.metadata)) {
    const meta = body.metadata;
    if (!isRecord(meta) || !Object.values(meta).every((v) => typeof v === 'string')) {
      fail("Invalid 'metadata': expected an object of string values.", 'metadata');
    }
  }
}

function parseOrThrow(body: unknown): Conversation {
  if (!isRecord(body)) fail('The request body must be a JSON object.');
  if (typeof body.model !== 'string' || body.model.length === 0)
    fail("'model' must be a non-empty string.", 'model');
  const { messages } = body;
  if (!Array.isArray(messages) || messages.length === 0)
    fail("'messages' must be a non-empty array.", 'messages');
  for (const field of ['max_tokens', 'max_completion_tokens'] as const) {
    const value = body[field];
    if (!isAbsent(value) && !isPositiveInt(value)) fail(`'${field}' must be a positive integer.`, field);
  }
  // `stream` and `stream_options` are read by the streamer (openai-stream.ts).
  let stops: string[] = [];
  if (typeof body.stop === 'string') stops = [body.stop];
  else if (isStringArray(body.stop)) stops = body.stop;
  else if (!isAbsent(body.stop)) fail("'stop' must be a string or an array of strings.", 'stop');
  checkScalars(body);

  const tools = readTools(body.tools);
  const toolUse = readToolChoice(body.tool_choice, tools);
  if (!isAbsent(body.parallel_tool_calls)) {
    if (typeof body.parallel_tool_calls !== 'boolean') {
      fail("Invalid 'parallel_tool_calls': expected a boolean.", 'parallel_tool_calls');
    }
    if (tools.length === 0) {
      fail(
        "Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only allowed when 'tools' are specified.",
        'parallel_tool_calls',
      );
    }
  }
  const read = readMessages(messages);
  const output = readResponseFormat(body.response_format, read.messageTexts);

  let n = 1;
  if (!isAbsent(body.n)) {
    if (!isInt(body.n) || body.n < 1 || body.n > 128)
      fail("Invalid 'n': expected an integer between 1 and 128.", 'n');
    n = body.n;
  }
  if (!isAbsent(body.logprobs) && typeof body.logprobs !== 'boolean') {
    fail("Invalid 'logprobs': expected a boolean.", 'logprobs');
  }
  if (!isAbsent(body.top_logprobs)) {
    if (!isInt(body.top_logprobs) || body.top_logprobs < 0 || body.top_logprobs > 20) {
      fail("Invalid 'top_logprobs': expected an integer between 0 and 20.", 'top_logprobs');
    }
    if (body.logprobs !== true) {
      fail("The 'top_logprobs' parameter is only allowed when 'logprobs' is enabled.", 'top_logprobs');
    }
  }
  let reasoningTokens = 0;
  if (!isAbsent(body.reasoning_effort)) {
    const effort = REASONING_TOKENS[body.reasoning_effort as string];
    if (typeof body.reasoning_effort !== 'string' || effort === undefined) {
      fail(
        `Invalid value: '${String(body.reasoning_effort)}'. Supported values are: ${Object.keys(
          REASONING_TOKENS,
        )
          .map((e) => `'${e}'`)
          .join(', ')}.`,
        'reasoning_effort',
      );
    }
    reasoningTokens = effort;
  }
  const cap = isPositiveInt(body.max_completion_tokens)
    ? body.max_completion_tokens
    : isPositiveInt(body.max_tokens)
      ? body.max_tokens
      : DEFAULT_CAP;
  return {
    model: body.model,
    messageTexts: read.messageTexts,
    lastUserText: read.lastUserText,
    cap,
    stops,
    extraPromptTokens: read.extra + toolsTokens(body.tools),
    tools,
    toolUse,
    parallelToolCalls: body.parallel_tool_calls !== false,
    toolResults: read.toolResults,
    media: read.media,
    output,
    n,
    logprobs: body.logprobs === true ? { top: isInt(body.top_logprobs) ? body.top_logprobs : 0 } : null,
    reasoningTokens,
    leadText: false,
    showThoughts: false,
  };
}

/** The conversation of a Chat Completions request, or why OpenAI would refuse it. */
export function parseOpenAIRequest(body: unknown): Conversation | Rejection {
  try {
    return parseOrThrow(body);
  } catch (err) {
    if (err instanceof OpenAIInvalid) return reject(err.message, err.param);
    throw err;
  }
}
