import type { ProviderName, WireFormat } from './types.js';

/**
 * The catalog of the eight providers: which wire format each speaks and its defaults. This is the one
 * place that switches on provider names. Prices are USD per 1M tokens as decimal strings (parsed exactly
 * into nanodollars by the config loader); every default can be overridden per provider
 * (`PROV_<NAME>_*`, see docs/configuration.md).
 */
export interface CatalogEntry {
  name: ProviderName;
  wireFormat: WireFormat;
  /** Base URL as the official SDK of that wire format takes it. */
  baseUrl: string;
  model: string;
  inputPriceUsd: string;
  outputPriceUsd: string;
  /**
   * The provider's published price of a prompt token read from its cache, as a multiple of the input price
   * (a decimal string); absent: the input price (no known discount). docs/providers.md lists the sources.
   */
  cacheReadRatio?: string;
  /** The same for a prompt token written to its cache; absent: the input price (no write charge). */
  cacheWriteRatio?: string;
  /** Completion cap sent upstream when the caller gives no `max_tokens`. */
  defaultMaxTokens: number;
  /** In the default auto rotation list (`AUTO_PROVIDERS` replaces the list). */
  inAutoRotation: boolean;
  /** Upper bound of the prompt tokens one image costs (docs/api.md, "Holds"). */
  imageTokens: number;
}

export const CATALOG: readonly CatalogEntry[] = Object.freeze([
  {
    name: 'prov-deepseek',
    wireFormat: 'openai-compatible',
    baseUrl: 'https://api.deepseek.com/v1',
    model: 'deepseek-chat',
    inputPriceUsd: '0.28',
    outputPriceUsd: '0.42',
    // DeepSeek: a cache hit costs a tenth of a miss ($0.028 against $0.28).
    cacheReadRatio: '0.1',
    defaultMaxTokens: 4096,
    inAutoRotation: true,
    imageTokens: 2_500,
  },
  {
    name: 'prov-qwen',
    wireFormat: 'openai-compatible',
    baseUrl: 'https://dashscope-intl.aliyuncs.com/compatible-mode/v1',
    model: 'qwen-plus',
    inputPriceUsd: '0.4',
    outputPriceUsd: '1.2',
    // Alibaba Model Studio, implicit cache: a hit costs 20% of the input price.
    cacheReadRatio: '0.2',
    defaultMaxTokens: 4096,
    inAutoRotation: true,
    imageTokens: 16_384,
  },
  {
    name: 'prov-kimi',
    wireFormat: 'openai-compatible',
    baseUrl: 'https://api.moonshot.ai/v1',
    model: 'kimi-k2-0905-preview',
    inputPriceUsd: '0.6',
    outputPriceUsd: '2.5',
    // Moonshot: a cache hit costs a quarter of a miss ($0.15 against $0.60).
    cacheReadRatio: '0.25',
    defaultMaxTokens: 4096,
    inAutoRotation: true,
    imageTokens: 2_500,
  },
  {
    name: 'prov-gpt-oss-120b',
    wireFormat: 'openai-compatible',
    baseUrl: 'https://api.groq.com/openai/v1',
    model: 'openai/gpt-oss-120b',
    inputPriceUsd: '0.15',
    outputPriceUsd: '0.75',
    // Groq's prompt caching: cached tokens at half the input price.
    cacheReadRatio: '0.5',
    defaultMaxTokens: 4096,
    inAutoRotation: true,
    imageTokens: 2_500,
  },
  {
    name: 'prov-gemini',
    wireFormat: 'gemini',
    baseUrl: 'https://generativelanguage.googleapis.com',
    model: 'gemini-2.5-flash',
    inputPriceUsd: '0.3',
    outputPriceUsd: '2.5',
    // Gemini 2.5 implicit caching: cached tokens at a tenth of the input price.
    cacheReadRatio: '0.1',
    defaultMaxTokens: 4096,
    inAutoRotation: false,
    imageTokens: 4_128,
  },
  {
    name: 'prov-llama',
    wireFormat: 'openai-compatible',
    baseUrl: 'https://api.groq.com/openai/v1',
    model: 'llama-3.3-70b-versatile',
    inputPriceUsd: '0.59',
    outputPriceUsd: '0.79',
    defaultMaxTokens: 4096,
    inAutoRotation: false,
    imageTokens: 2_500,
  },
  {
    name: 'prov-mistral',
    wireFormat: 'openai-compatible',
    baseUrl: 'https://api.mistral.ai/v1',
    model: 'mistral-small-latest',
    inputPriceUsd: '0.1',
    outputPriceUsd: '0.3',
    defaultMaxTokens: 4096,
    inAutoRotation: false,
    imageTokens: 4_200,
  },
  {
    name: 'prov-claude',
    wireFormat: 'anthropic',
    baseUrl: 'https://api.anthropic.com',
    model: 'claude-sonnet-4-5',
    inputPriceUsd: '3',
    outputPriceUsd: '15',
    // Anthropic: a cache read costs 0.1× the input price, a (5-minute) cache write 1.25×.
    cacheReadRatio: '0.1',
    cacheWriteRatio: '1.25',
    defaultMaxTokens: 4096,
    inAutoRotation: false,
    imageTokens: 1_600,
  },
]);

/** `prov-gpt-oss-120b` → `GPT_OSS_120B`: the `<NAME>` of the `PROV_<NAME>_*` variables. */
export function envNameOf(provider: ProviderName): string {
  return provider
    .replace(/^prov-/, '')
    .toUpperCase()
    .replace(/-/g, '_');
}
