/**
 * The parts of Gemini's `generateContent` request the adapter writes, as the REST API spells them
 * (camelCase JSON of the v1beta protos). Only what the gateway sends is typed.
 *
 * @see https://ai.google.dev/api/generate-content#request-body
 * @see https://ai.google.dev/api/caching#Content
 */

/** `inlineData`: the bytes of an image, audio clip or document, base64. */
export interface GeminiBlob {
  mimeType: string;
  data: string;
}

/** A predicted (or replayed) function call: `args` is a JSON object. */
export interface GeminiFunctionCall {
  name: string;
  args: Record<string, unknown>;
}

/** A function's result: `response` is a JSON object. */
export interface GeminiFunctionResponse {
  name: string;
  response: Record<string, unknown>;
}

/**
 * One `Part` of a turn: exactly one of its data fields is set. `thoughtSignature` rides along with a
 * `functionCall` part (see `geminiThoughtSignature`).
 *
 * @see https://ai.google.dev/api/caching#Part
 */
export type GeminiPart =
  | { text: string }
  | { inlineData: GeminiBlob }
  | { functionCall: GeminiFunctionCall; thoughtSignature?: string }
  | { functionResponse: GeminiFunctionResponse };

/** One turn: `user` (the caller, function results included) or `model`. */
export interface GeminiContent {
  role: 'user' | 'model';
  parts: GeminiPart[];
}

/** `systemInstruction`: a content without a role, text only. */
export interface GeminiSystemInstruction {
  parts: { text: string }[];
}

/**
 * A function the model may call. `parametersJsonSchema` takes plain JSON Schema (the alternative,
 * `parameters`, takes Gemini's OpenAPI-subset `Schema`).
 *
 * @see https://ai.google.dev/api/caching#FunctionDeclaration
 */
export interface GeminiFunctionDeclaration {
  name: string;
  description?: string;
  parametersJsonSchema?: Record<string, unknown>;
}

/** @see https://ai.google.dev/api/caching#Tool */
export interface GeminiTool {
  functionDeclarations: GeminiFunctionDeclaration[];
}

/** @see https://ai.google.dev/api/caching#FunctionCallingConfig */
export interface GeminiFunctionCallingConfig {
  mode: 'AUTO' | 'ANY' | 'NONE';
  allowedFunctionNames?: string[];
}

/** @see https://ai.google.dev/api/caching#ToolConfig */
export interface GeminiToolConfig {
  functionCallingConfig: GeminiFunctionCallingConfig;
}

/** @see https://ai.google.dev/api/generate-content#ThinkingConfig */
export interface GeminiThinkingConfig {
  thinkingBudget: number;
}

/** @see https://ai.google.dev/api/generate-content#generationconfig */
export interface GeminiGenerationConfig {
  maxOutputTokens: number;
  temperature?: number;
  topP?: number;
  stopSequences?: string[];
  presencePenalty?: number;
  frequencyPenalty?: number;
  seed?: number;
  candidateCount?: number;
  responseMimeType?: string;
  responseJsonSchema?: Record<string, unknown>;
  responseLogprobs?: boolean;
  logprobs?: number;
  thinkingConfig?: GeminiThinkingConfig;
}

/** The whole request body. */
export interface GeminiRequestBody {
  contents: GeminiContent[];
  systemInstruction?: GeminiSystemInstruction;
  tools?: GeminiTool[];
  toolConfig?: GeminiToolConfig;
  generationConfig: GeminiGenerationConfig;
}
