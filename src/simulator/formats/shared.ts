import type { Answer } from '../answer.js';
import type { Conversation } from '../conversation.js';
import type { WireFormat } from '../types.js';

export type { Conversation } from '../conversation.js';

/** A request the format refuses (400): the message, and (OpenAI) the field it names. */
export interface Rejection {
  rejected: string;
  param: string | null;
}

export function reject(message: string, param: string | null = null): Rejection {
  return { rejected: message, param };
}

export function isRejection<T extends object>(value: T | Rejection): value is Rejection {
  return 'rejected' in value;
}

/** Usage numbers to report, or null for none at all. */
export interface Usage {
  promptTokens: number;
  /** All output tokens, reasoning included. */
  completionTokens: number;
  /** Reasoning (thinking) tokens, part of `completionTokens`. */
  reasoningTokens: number;
  /** Prompt tokens read from the cache, part of `promptTokens`; absent: none. */
  cacheReadTokens?: number;
  /** Prompt tokens written to the cache, part of `promptTokens`; absent: none. */
  cacheWriteTokens?: number;
  /** OpenAI format: report the cache as DeepSeek does. */
  deepseek?: boolean;
}

export interface HttpReply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** The request as an adapter sees it. */
export interface IncomingCall {
  /** Path below the slug prefix, e.g. `/v1/chat/completions`. */
  subpath: string;
  method: string;
  headers: Record<string, string | undefined>;
  query: URLSearchParams;
  body: unknown;
}

/** One upstream wire format: its endpoint, authentication, validation, bodies and error shape. */
export interface FormatAdapter {
  readonly format: WireFormat;
  /** URL prefix segment: `/openai`, `/anthropic`, `/gemini`. */
  readonly prefix: string;
  /** Base URL for a slug, given the simulator URL. */
  baseUrl(url: string, slug: string): string;
  /** Whether `subpath` is this format's completion endpoint; returns the model named in the path if any. */
  matchEndpoint(subpath: string): { model: string | null } | null;
  /** An error reply when the credentials are missing or malformed; null when accepted. */
  authenticate(call: IncomingCall): HttpReply | null;
  /** The conversation, or why the request is refused (`headers`: the request's, lower-cased names). */
  parse(
    body: unknown,
    pathModel: string | null,
    headers: Readonly<Record<string, string | undefined>>,
  ): Conversation | Rejection;
  success(slug: string, conv: Conversation, answer: Answer, usage: Usage | null): unknown;
  noChoices(slug: string, conv: Conversation, usage: Usage): unknown;
  /**
   * The format's token-count endpoint, where it has one: its subpath, and the answer to a call of it (the
   * prompt tokens a completion of the same request would report).
   */
  readonly countTokens?: {
    subpath: string;
    answer(body: unknown, headers: Readonly<Record<string, string | undefined>>): HttpReply;
  };
  /** An error in the format's own shape (`param`: the field it is about, where the format names one). */
  error(status: number, message: string, param?: string | null): HttpReply;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function isPositiveInt(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value > 0;
}

export function isInt(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value);
}

export function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((v) => typeof v === 'string');
}

/** A finite number within [min, max]. */
export function isNumberIn(value: unknown, min: number, max: number): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= min && value <= max;
}

/** Undefined or null: a field left out. */
export function isAbsent(value: unknown): value is undefined | null {
  return value === undefined || value === null;
}

/** Random alphanumeric id of `length` characters. */
export function randomId(length: number): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let out = '';
  for (let i = 0; i < length; i++) out += alphabet[Math.floor(Math.random() * alphabet.length)];
  return out;
}

/** Text of a content value that is a string or an array of `{type:'text', text}` parts; null if neither. */
export function textOfParts(content: unknown): string | null {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return null;
  const texts: string[] = [];
  for (const part of content) {
    if (!isRecord(part) || part.type !== 'text' || typeof part.text !== 'string') return null;
    texts.push(part.text);
  }
  return texts.join('\n');
}
