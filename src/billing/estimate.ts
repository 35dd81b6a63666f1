import { maxTokensFor, tokenCost } from '../money/money.js';
import type {
  ChatMessage,
  ContentPart,
  ProviderConfig,
  ResponseFormat,
  ToolDefinition,
} from '../providers/types.js';
import { isPdf, pdfPageBound, UNCOUNTED_PDF_PAGES } from './pdf-pages.js';

/** Chat-template overhead upstreams count beyond the text (docs/api.md, "Holds"). */
export const TOKENS_PER_MESSAGE = 8;
export const TOKENS_PER_REQUEST = 16;
/**
 * Offering tools or asking for structured output makes the upstream add instructions of its own to the
 * prompt (Anthropic's tool-use system prompt is a few hundred tokens): counted once per request.
 */
export const TOKENS_FOR_TOOLS = 512;
/** Each tool definition, tool call and tool result is wrapped in template tokens of its own. */
export const TOKENS_PER_TOOL_ITEM = 16;
/** Audio counts one token per started 16 bytes of its decoded size (docs/api.md, "Holds"). */
export const AUDIO_BYTES_PER_TOKEN = 16;
/**
 * The text of one PDF page beyond what the file's bytes bound (a page's text is compressed in its bytes):
 * the top of Anthropic's documented 1,500–3,000 tokens a page. Each page is also read as an image, counted
 * by the provider's image bound (docs/api.md, "Billing").
 */
export const PDF_TEXT_TOKENS_PER_PAGE = 3_000;

/**
 * What a prompt will cost at most, in two parts: `tokens` (text, tools, tool calls and results, audio,
 * files and the template overhead, the same on every provider) and `images`, each of which a provider
 * counts by its own bound (`ProviderConfig.imageTokens`).
 */
export interface PromptSize {
  tokens: number;
  images: number;
}

/** Decoded size of base64 text, rounded up. */
function base64Bytes(data: string): number {
  return Math.ceil((data.length * 3) / 4);
}

/**
 * What a file part may cost, in O(bytes) without parsing it beyond a scan: its decoded bytes (text is at
 * least a byte a token) plus, for a PDF, every page (`pdfPageBound`) as `PDF_TEXT_TOKENS_PER_PAGE` of text
 * and one image — upstreams read a PDF's pages as text and as images; for any other file, one image. A
 * file the gateway cannot see (sent by id) counts as a PDF of `UNCOUNTED_PDF_PAGES` pages.
 */
export function fileSize(part: Extract<ContentPart, { type: 'file' }>): PromptSize {
  if (part.data === undefined) {
    return { tokens: UNCOUNTED_PDF_PAGES * PDF_TEXT_TOKENS_PER_PAGE, images: UNCOUNTED_PDF_PAGES };
  }
  const bytes = Buffer.from(part.data, 'base64');
  if (!isPdf(part.mediaType, bytes)) return { tokens: bytes.length, images: 1 };
  const pages = pdfPageBound(bytes);
  return { tokens: bytes.length + pages * PDF_TEXT_TOKENS_PER_PAGE, images: pages };
}

function partTokens(part: ContentPart): { tokens: number; images: number } {
  switch (part.type) {
    case 'text':
      return { tokens: Buffer.byteLength(part.text, 'utf8'), images: 0 };
    case 'image':
      return { tokens: 0, images: 1 };
    case 'audio':
      return { tokens: Math.ceil(base64Bytes(part.data) / AUDIO_BYTES_PER_TOKEN), images: 0 };
    case 'file':
      return fileSize(part);
  }
}

/** What the hold needs to know of a call: what the upstream reads, and how much it may write. */
export interface CallShape {
  messages: readonly ChatMessage[];
  tools?: readonly ToolDefinition[] | undefined;
  responseFormat?: ResponseFormat | undefined;
  /** The caller's completion cap per choice, if any. */
  maxTokens: number | undefined;
  /** Choices asked for: each may write up to the cap. */
  n: number;
  /** The caller's cap is a ceiling that may be lowered to what the balance holds, down to this floor. */
  maxTokensFloor?: number | undefined;
  /** Bytes the upstream reads that `messages` does not carry (a request passed through as sent). */
  uncarriedPromptBytes?: number | undefined;
}

/**
 * An upper bound of the prompt's token count in O(bytes), without a tokenizer: a BPE token is at least
 * one byte of UTF-8, so the byte count of everything the upstream reads as text bounds its tokens; the
 * template overhead is added on top, and images are counted apart.
 */
export function promptSize(
  spec: Pick<CallShape, 'messages' | 'tools' | 'responseFormat' | 'uncarriedPromptBytes'>,
): PromptSize {
  let tokens = TOKENS_PER_REQUEST + (spec.uncarriedPromptBytes ?? 0);
  let images = 0;
  for (const m of spec.messages) {
    tokens += TOKENS_PER_MESSAGE;
    if (m.name !== undefined) tokens += Buffer.byteLength(m.name, 'utf8');
    if (typeof m.content === 'string') tokens += Buffer.byteLength(m.content, 'utf8');
    else if (Array.isArray(m.content)) {
      for (const part of m.content) {
        const counted = partTokens(part);
        tokens += counted.tokens;
        images += counted.images;
      }
    }
    if (m.role === 'assistant') {
      if (m.refusal !== undefined) tokens += Buffer.byteLength(m.refusal, 'utf8');
      for (const call of m.toolCalls ?? []) {
        tokens += TOKENS_PER_TOOL_ITEM + Buffer.byteLength(call.id + call.name + call.arguments, 'utf8');
      }
    } else if (m.role === 'tool') {
      tokens += TOKENS_PER_TOOL_ITEM + Buffer.byteLength(m.toolCallId + m.name, 'utf8');
    }
  }
  const tools = spec.tools ?? [];
  if (tools.length > 0 || (spec.responseFormat !== undefined && spec.responseFormat.type !== 'text')) {
    tokens += TOKENS_FOR_TOOLS;
  }
  for (const tool of tools) tokens += TOKENS_PER_TOOL_ITEM + Buffer.byteLength(JSON.stringify(tool), 'utf8');
  if (spec.responseFormat?.type === 'json_schema') {
    tokens += Buffer.byteLength(JSON.stringify(spec.responseFormat), 'utf8');
  }
  return { tokens, images };
}

/** The prompt-token bound of `size` on `provider`. */
export function promptTokenBound(size: PromptSize, provider: ProviderConfig): number {
  return size.tokens + size.images * provider.imageTokens;
}

/** The dearest of a provider's prompt prices: input, cache read, cache write. */
export function promptPriceBound(
  provider: Pick<ProviderConfig, 'inputPriceNano' | 'cacheReadPriceNano' | 'cacheWritePriceNano'>,
): number {
  return Math.max(provider.inputPriceNano, provider.cacheReadPriceNano, provider.cacheWritePriceNano);
}

/**
 * What a prompt of at most `tokens` may cost on `provider`, however the upstream splits it between its
 * cache and the rest: every token at the dearest prompt price (a cache write can cost more than the input
 * price). `billFor` never charges a prompt more than this.
 */
export function promptCostBound(provider: ProviderConfig, tokens: number): number {
  return tokenCost(tokens, promptPriceBound(provider));
}

export interface HoldPlanInput {
  prompt: PromptSize;
  /** The caller's explicit completion cap (per choice), if any. */
  requestedMaxTokens: number | undefined;
  /** Set when `requestedMaxTokens` is a ceiling the hold may lower, down to this floor. */
  ceilingFloor?: number | undefined;
  minCompletionTokens: number;
  /** Choices asked for: each may write up to the cap. */
  choices: number;
}

/** The upper-bound cost of one call to `provider` with completion cap `cap` per choice. */
export function callCostBound(provider: ProviderConfig, input: HoldPlanInput, cap: number): number {
  return (
    promptCostBound(provider, promptTokenBound(input.prompt, provider)) +
    tokenCost(cap * input.choices, provider.outputPriceNano)
  );
}

/** The completion cap a call to `provider` would like: the caller's, or the provider's default. */
export function desiredCap(provider: ProviderConfig, requestedMaxTokens: number | undefined): number {
  return requestedMaxTokens ?? provider.defaultMaxTokens;
}

/**
 * The completion cap to send to `provider` when `holdNano` is what is held: the desired cap, lowered to
 * what the hold can pay for. Returns undefined when the hold cannot pay for a useful call (the caller's
 * explicit cap is never lowered, unless it is a ceiling — then its floor, at least `minCompletionTokens`,
 * is the floor; otherwise `minCompletionTokens` is the floor).
 */
export function capWithinHold(
  provider: ProviderConfig,
  holdNano: number,
  input: HoldPlanInput,
): number | undefined {
  const want = desiredCap(provider, input.requestedMaxTokens);
  const inputCost = promptCostBound(provider, promptTokenBound(input.prompt, provider));
  const affordable = Math.floor(maxTokensFor(holdNano - inputCost, provider.outputPriceNano) / input.choices);
  const cap = Math.min(want, affordable);
  const floor =
    input.requestedMaxTokens === undefined
      ? Math.min(input.minCompletionTokens, want)
      : input.ceilingFloor === undefined
        ? input.requestedMaxTokens
        : Math.min(want, Math.max(input.ceilingFloor, input.minCompletionTokens));
  return cap >= floor ? cap : undefined;
}

/**
 * What to try to hold for a route: the most any of its candidates could cost at its desired cap, so a
 * failover never needs more money than is already held.
 */
export function fullHoldFor(candidates: readonly ProviderConfig[], input: HoldPlanInput): number {
  let max = 0;
  for (const c of candidates) {
    max = Math.max(max, callCostBound(c, input, desiredCap(c, input.requestedMaxTokens)));
  }
  return max;
}
