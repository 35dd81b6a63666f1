/**
 * Reads and validates a Gemini `generateContent` request as the Gemini API does: protobuf JSON (camelCase
 * or snake_case names, unknown names refused, `gemini-fields.ts`); function declarations and their
 * `Schema`, tool config and generation config (structured output, candidates, log probabilities,
 * thinking) here; the contents and the pairing of function calls in `gemini-contents.ts`. Error texts
 * follow Gemini's where known.
 *
 * @see https://ai.google.dev/api/generate-content#request-body
 * @see https://ai.google.dev/gemini-api/docs/function-calling
 * @see https://ai.google.dev/gemini-api/docs/structured-output
 * @see https://ai.google.dev/gemini-api/docs/thinking
 */
import type { OutputFormat, ToolSpec, ToolUse } from '../conversation.js';
import { toolsTokens } from '../prompt-tokens.js';
import { DEFAULT_CAP } from '../reply.js';
import { pairFunctions, readContents, readSystem, V1BETA } from './gemini-contents.js';
import { checkSchema, fail, GeminiInvalid, notAMessage, readFields } from './gemini-fields.js';
import {
  type Conversation,
  isInt,
  isNumberIn,
  isPositiveInt,
  isRecord,
  isStringArray,
  type Rejection,
  reject,
} from './shared.js';

/** Thought tokens of a candidate when thinking is on. */
export const THOUGHT_TOKENS = 24;
/** The text of the thought part shown with `includeThoughts`. */
export const THOUGHT_TEXT = 'Simulated thinking.';

const REQUEST_FIELDS = [
  'model',
  'contents',
  'systemInstruction',
  'tools',
  'toolConfig',
  'safetySettings',
  'generationConfig',
  'cachedContent',
];
const GENERATION_FIELDS = [
  'stopSequences',
  'responseMimeType',
  'responseSchema',
  'responseJsonSchema',
  'responseModalities',
  'responseFormat',
  'candidateCount',
  'maxOutputTokens',
  'temperature',
  'topP',
  'topK',
  'seed',
  'presencePenalty',
  'frequencyPenalty',
  'responseLogprobs',
  'logprobs',
  'enableEnhancedCivicAnswers',
  'enableAffectiveDialog',
  'speechConfig',
  'thinkingConfig',
  'imageConfig',
  'mediaResolution',
  'audioTimestamp',
];
const TOOL_FIELDS = [
  'functionDeclarations',
  'googleSearch',
  'googleSearchRetrieval',
  'codeExecution',
  'urlContext',
  'fileSearch',
  'googleMaps',
  'computerUse',
  'mcpServers',
];
const DECLARATION_FIELDS = [
  'name',
  'description',
  'parameters',
  'parametersJsonSchema',
  'response',
  'responseJsonSchema',
  'behavior',
];
const FUNCTION_NAME = /^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$/;
const MIME_TYPES = new Set([
  'text/plain',
  'application/json',
  'application/xml',
  'application/yaml',
  'text/x.enum',
]);

function readTools(tools: unknown): ToolSpec[] {
  if (tools === undefined) return [];
  if (!Array.isArray(tools))
    fail('Invalid JSON payload received. Proto field "tools" is repeating: expected a list.');
  const specs: ToolSpec[] = [];
  for (const [t, raw] of tools.entries()) {
    const at = `tools[${t}]`;
    if (!isRecord(raw)) notAMessage(at, `${V1BETA}.Tool`, raw);
    const tool = readFields(raw, TOOL_FIELDS, at);
    if (tool.functionDeclarations === undefined) continue;
    if (!Array.isArray(tool.functionDeclarations)) {
      fail(
        `Invalid JSON payload received. Proto field "${at}.function_declarations" is repeating: expected a list.`,
      );
    }
    for (const [d, rawDecl] of tool.functionDeclarations.entries()) {
      const here = `${at}.function_declarations[${d}]`;
      if (!isRecord(rawDecl)) notAMessage(here, `${V1BETA}.FunctionDeclaration`, rawDecl);
      const decl = readFields(rawDecl, DECLARATION_FIELDS, here);
      if (typeof decl.name !== 'string' || !FUNCTION_NAME.test(decl.name)) {
        fail(
          `* GenerateContentRequest.${here}.name: Invalid function name. Must start with a letter or an underscore. Must be alphameric (a-z, A-Z, 0-9), underscores (_), dots (.), colons (:) or dashes (-), with a maximum length of 64.`,
        );
      }
      const name = decl.name;
      if (specs.some((s) => s.name === name)) {
        fail(`* GenerateContentRequest.${here}.name: Duplicate function declaration found: ${name}`);
      }
      if (decl.parameters !== undefined && decl.parametersJsonSchema !== undefined) {
        fail(
          `* GenerateContentRequest.${here}: parameters and parameters_json_schema are mutually exclusive.`,
        );
      }
      let schema: unknown;
      if (decl.parameters !== undefined) schema = checkSchema(decl.parameters, `${here}.parameters`);
      else if (decl.parametersJsonSchema !== undefined) {
        if (!isRecord(decl.parametersJsonSchema)) {
          notAMessage(`${here}.parameters_json_schema`, 'google.protobuf.Value', decl.parametersJsonSchema);
        }
        schema = decl.parametersJsonSchema;
      }
      specs.push({ name, schema });
    }
  }
  return specs;
}

function readToolConfig(value: unknown, tools: ToolSpec[]): ToolUse {
  if (value === undefined) return { kind: 'auto' };
  if (!isRecord(value)) notAMessage('tool_config', `${V1BETA}.ToolConfig`, value);
  const config = readFields(
    value,
    ['functionCallingConfig', 'retrievalConfig', 'includeServerSideToolInvocations'],
    'tool_config',
  );
  const raw = config.functionCallingConfig;
  if (raw === undefined) return { kind: 'auto' };
  const at = 'tool_config.function_calling_config';
  if (!isRecord(raw)) notAMessage(at, `${V1BETA}.FunctionCallingConfig`, raw);
  const calling = readFields(raw, ['mode', 'allowedFunctionNames', 'streamFunctionCallArguments'], at);
  const mode = calling.mode ?? 'MODE_UNSPECIFIED';
  if (typeof mode !== 'string' || !['MODE_UNSPECIFIED', 'AUTO', 'ANY', 'NONE', 'VALIDATED'].includes(mode)) {
    fail(
      `Invalid value at '${at}.mode' (type.googleapis.com/${V1BETA}.FunctionCallingConfig.Mode), ${JSON.stringify(mode)}`,
    );
  }
  const allowed = calling.allowedFunctionNames;
  if (allowed !== undefined && !isStringArray(allowed)) {
    fail(`Invalid value at '${at}.allowed_function_names' (TYPE_STRING): expected a list of names`);
  }
  if ((mode === 'ANY' || mode === 'VALIDATED' || allowed !== undefined) && tools.length === 0) {
    fail(`* GenerateContentRequest.${at}: function calling config is set without function_declarations.`);
  }
  if (allowed !== undefined && allowed.length > 0) {
    if (mode !== 'ANY' && mode !== 'VALIDATED') {
      fail(
        `* GenerateContentRequest.${at}.allowed_function_names: may only be set when mode is ANY or VALIDATED.`,
      );
    }
    for (const [k, name] of allowed.entries()) {
      if (!tools.some((t) => t.name === name)) {
        fail(
          `* GenerateContentRequest.${at}.allowed_function_names[${k}]: ${name} is not a declared function.`,
        );
      }
    }
  }
  const only = allowed !== undefined && allowed.length > 0 ? allowed : null;
  switch (mode) {
    case 'NONE':
      return { kind: 'none' };
    case 'ANY':
      return only ? { kind: 'only', names: only } : { kind: 'required' };
    case 'VALIDATED':
      return only ? { kind: 'only', names: only } : { kind: 'auto' };
    default:
      return { kind: 'auto' };
  }
}

interface Generation {
  cap: number;
  stops: string[];
  output: OutputFormat;
  n: number;
  logprobs: { top: number } | null;
  thinking: boolean;
  showThoughts: boolean;
}

function readThinking(value: unknown, at: string): { on: boolean; show: boolean } {
  if (!isRecord(value)) notAMessage(at, `${V1BETA}.ThinkingConfig`, value);
  const config = readFields(value, ['includeThoughts', 'thinkingBudget', 'thinkingLevel'], at);
  const { includeThoughts, thinkingBudget, thinkingLevel } = config;
  if (includeThoughts !== undefined && typeof includeThoughts !== 'boolean') {
    fail(`Invalid value at '${at}.include_thoughts' (TYPE_BOOL), ${JSON.stringify(includeThoughts)}`);
  }
  if (thinkingBudget !== undefined && !(isInt(thinkingBudget) && thinkingBudget >= -1)) {
    fail(
      `* GenerateContentRequest.${at}.thinking_budget: must be -1 (dynamic), 0 (off) or a positive number of tokens.`,
    );
  }
  if (thinkingLevel !== undefined) {
    if (
      typeof thinkingLevel !== 'string' ||
      !['MINIMAL', 'LOW', 'MEDIUM', 'HIGH'].includes(thinkingLevel.toUpperCase())
    ) {
      fail(
        `Invalid value at '${at}.thinking_level' (type.googleapis.com/${V1BETA}.ThinkingConfig.ThinkingLevel), ${JSON.stringify(thinkingLevel)}`,
      );
    }
    if (thinkingBudget !== undefined)
      fail('You can only set only one of thinking budget and thinking level.');
  }
  const on = thinkingLevel !== undefined || (thinkingBudget !== undefined && thinkingBudget !== 0);
  return { on, show: on && includeThoughts === true };
}

function readGeneration(value: unknown): Generation {
  const generation: Generation = {
    cap: DEFAULT_CAP,
    stops: [],
    output: { kind: 'text' },
    n: 1,
    logprobs: null,
    thinking: false,
    showThoughts: false,
  };
  if (value === undefined) return generation;
  const at = 'generation_config';
  if (!isRecord(value)) notAMessage(at, `${V1BETA}.GenerationConfig`, value);
  const config = readFields(value, GENERATION_FIELDS, at);
  const where = (field: string) => `* GenerateContentRequest.${at}.${field}`;
  if (config.maxOutputTokens !== undefined) {
    if (!isPositiveInt(config.maxOutputTokens))
      fail(`${where('max_output_tokens')}: must be a positive integer`);
    generation.cap = config.maxOutputTokens;
  }
  if (config.temperature !== undefined && !isNumberIn(config.temperature, 0, 2)) {
    fail(`${where('temperature')}: must be a number in [0.0, 2.0]`);
  }
  if (config.topP !== undefined && !isNumberIn(config.topP, 0, 1))
    fail(`${where('top_p')}: must be a number in [0.0, 1.0]`);
  if (config.topK !== undefined && !(isInt(config.topK) && config.topK >= 0))
    fail(`${where('top_k')}: must be a non-negative integer`);
  if (config.seed !== undefined && !isInt(config.seed)) fail(`${where('seed')}: must be an integer`);
  for (const field of ['presencePenalty', 'frequencyPenalty'] as const) {
    if (config[field] !== undefined && typeof config[field] !== 'number')
      fail(`${where(field.replace(/P/, '_p'))}: must be a number`);
  }
  if (config.stopSequences !== undefined) {
    if (!isStringArray(config.stopSequences)) fail(`${where('stop_sequences')}: must be an array of strings`);
    generation.stops = config.stopSequences;
  }
  if (config.candidateCount !== undefined) {
    if (!isInt(config.candidateCount) || config.candidateCount < 1 || config.candidateCount > 8) {
      fail(`${where('candidate_count')}: must be between 1 and 8`);
    }
    generation.n = config.candidateCount;
  }
  const mime = config.responseMimeType ?? 'text/plain';
  if (typeof mime !== 'string' || !MIME_TYPES.has(mime)) {
    fail(
      `${where('response_mime_type')}: allowed mimetypes are \`text/plain\`, \`application/json\`, \`application/xml\`, \`application/yaml\` and \`text/x.enum\`.`,
    );
  }
  if (config.responseSchema !== undefined && config.responseJsonSchema !== undefined) {
    fail(`${where('response_schema')}: response_schema and response_json_schema are mutually exclusive.`);
  }
  let schema: unknown;
  if (config.responseSchema !== undefined)
    schema = checkSchema(config.responseSchema, `${at}.response_schema`);
  if (config.responseJsonSchema !== undefined) {
    if (!isRecord(config.responseJsonSchema))
      fail(`${where('response_json_schema')}: must be a JSON Schema object`);
    schema = config.responseJsonSchema;
  }
  if (schema !== undefined && mime !== 'application/json' && mime !== 'text/x.enum') {
    fail(
      `${where('response_mime_type')}: must be application/json (or text/x.enum) when a response schema is set.`,
    );
  }
  if (mime === 'application/json') {
    generation.output = schema === undefined ? { kind: 'json_object' } : { kind: 'json_schema', schema };
  } else if (mime === 'text/x.enum') {
    if (schema === undefined)
      fail(`${where('response_schema')}: text/x.enum needs a response schema with an enum.`);
    generation.output = { kind: 'enum', schema };
  }
  if (config.responseLogprobs !== undefined && typeof config.responseLogprobs !== 'boolean') {
    fail(
      `Invalid value at '${at}.response_logprobs' (TYPE_BOOL), ${JSON.stringify(config.responseLogprobs)}`,
    );
  }
  if (config.logprobs !== undefined) {
    if (!isInt(config.logprobs) || config.logprobs < 0 || config.logprobs > 20) {
      fail(`${where('logprobs')}: must be in the range [0, 20].`);
    }
    if (config.responseLogprobs !== true)
      fail(`${where('logprobs')}: is only valid when response_logprobs is true.`);
  }
  if (config.responseLogprobs === true)
    generation.logprobs = { top: isInt(config.logprobs) ? config.logprobs : 0 };
  if (config.thinkingConfig !== undefined) {
    const thinking = readThinking(config.thinkingConfig, `${at}.thinking_config`);
    generation.thinking = thinking.on;
    generation.showThoughts = thinking.show;
  }
  return generation;
}

function parseOrThrow(body: unknown, model: string): Conversation {
  if (!isRecord(body)) fail('Invalid JSON payload received. The request body must be a JSON object.');
  const request = readFields(body, REQUEST_FIELDS, '');
  const { contents } = request;
  if (!Array.isArray(contents) || contents.length === 0)
    fail('* GenerateContentRequest.contents: contents is not specified');
  const system = request.systemInstruction === undefined ? null : readSystem(request.systemInstruction);
  const tools = readTools(request.tools);
  const toolUse = readToolConfig(request.toolConfig, tools);
  const generation = readGeneration(request.generationConfig);
  const reading = readContents(contents);
  const toolResults = pairFunctions(reading.turns);
  return {
    model,
    messageTexts: system === null ? reading.messageTexts : [system, ...reading.messageTexts],
    lastUserText: reading.lastUserText,
    cap: generation.cap,
    stops: generation.stops,
    extraPromptTokens: reading.extra + reading.media.tokens + toolsTokens(request.tools),
    tools,
    toolUse,
    parallelToolCalls: true,
    toolResults,
    media: reading.media,
    output: generation.output,
    n: generation.n,
    logprobs: generation.logprobs,
    reasoningTokens: generation.thinking ? THOUGHT_TOKENS : 0,
    leadText: false,
    showThoughts: generation.showThoughts,
  };
}

/** The conversation of a generateContent request, or why the Gemini API would refuse it. */
export function parseGeminiRequest(body: unknown, model: string): Conversation | Rejection {
  try {
    return parseOrThrow(body, model);
  } catch (err) {
    if (err instanceof GeminiInvalid) return reject(err.message);
    throw err;
  }
}
