/**
 * The upstream simulator: a local HTTP server (node:http) that speaks the three upstream wire formats —
 * OpenAI Chat Completions, Anthropic Messages, Gemini generateContent — for any provider slug, with
 * deterministic replies, o200k token usage and fault injection. Used by the tests, `tollgate demo` and the
 * benchmark. Imports nothing else from `src/`.
 *
 * Every format also streams (`"stream": true`, Gemini's `:streamGenerateContent`): the same answer cut into
 * about `streamChunks` pieces per streamed string, paced at `streamChunksPerSecond`, with stream faults
 * (`cut`, `stall`, `stream_error`) and a record per stream (`streams(slug)`) of how it ended.
 *
 * Beyond text it speaks tool calling, structured output, images / audio / files, several choices, log
 * probabilities and reasoning, in each format's own shape and with each API's own validation (`answer.ts`
 * says how the simulated model behaves, `prompt-tokens.ts` and `media.ts` how a prompt is counted). A
 * text-only request is answered and counted as it always was (`composeReply`, `promptTokens`).
 *
 * @see https://platform.openai.com/docs/api-reference/chat
 * @see https://docs.anthropic.com/en/api/messages
 * @see https://ai.google.dev/api/generate-content
 */
import type { AddressInfo } from 'node:net';
import { isReplyWords, MAX_REPLY_WORDS, parseStreamSettings } from './control.js';
import { FaultBook } from './faults.js';
import { REPLY_WORDS } from './reply.js';
import { createSimServer, FORMATS } from './server.js';
import type {
  SimFault,
  SimRequest,
  SimStream,
  Simulator,
  SimulatorOptions,
  StreamSettings,
  WireFormat,
} from './types.js';

export { THINKING_TOKENS } from './formats/anthropic-blocks.js';
export { THOUGHT_TOKENS } from './formats/gemini-request.js';
export { REASONING_TOKENS } from './formats/openai-request.js';
export { AUDIO_TOKENS_PER_KB, audioTokens, FILE_BYTES_PER_TOKEN, fileTokens, IMAGE_TOKENS } from './media.js';
export { toolCallTokens, toolResultTokens, toolsTokens } from './prompt-tokens.js';
export type {
  SimFault,
  SimRequest,
  SimStream,
  Simulator,
  SimulatorOptions,
  StreamSettings,
  WireFormat,
} from './types.js';

/** Pieces per streamed string unless set: enough to look like a stream, few enough to read in a test. */
export const DEFAULT_STREAM_CHUNKS = 12;

/** The settings checked, or a TypeError saying why not. */
function checkedStream(settings: Partial<StreamSettings>): Partial<StreamSettings> {
  const checked = parseStreamSettings(settings);
  if (typeof checked === 'string') throw new TypeError(checked);
  return checked;
}

function checkedWords(words: number): number {
  if (!isReplyWords(words))
    throw new TypeError(`reply words must be an integer 1–${MAX_REPLY_WORDS}, not ${words}`);
  return words;
}

/** Starts the simulator on `host:port` (default 127.0.0.1, ephemeral port). */
export async function startSimulator(options: SimulatorOptions = {}): Promise<Simulator> {
  const host = options.host ?? '127.0.0.1';
  const startLatency = options.latencyMs ?? 0;
  const startStream: StreamSettings = {
    chunks: options.streamChunks ?? DEFAULT_STREAM_CHUNKS,
    chunksPerSecond: options.streamChunksPerSecond ?? 0,
  };
  checkedStream(startStream);
  const startWords = options.replyWords === undefined ? REPLY_WORDS : checkedWords(options.replyWords);
  const faults = new FaultBook();
  const recorded = new Map<string, SimRequest[]>();
  const streamed = new Map<string, SimStream[]>();
  let latency = startLatency;
  let stream = { ...startStream };
  let words = startWords;

  function push<T>(map: Map<string, T[]>, slug: string, item: T): void {
    const list = map.get(slug);
    if (list) list.push(item);
    else map.set(slug, [item]);
  }

  const control = {
    setFault: (slug: string, fault: SimFault | null) => faults.set(slug, fault),
    setLatency: (ms: number) => {
      latency = Math.max(0, ms);
    },
    setStream: (settings: Partial<StreamSettings>) => {
      stream = { ...stream, ...checkedStream(settings) };
    },
    streamSettings: () => ({ ...stream }),
    setReplyWords: (n: number) => {
      words = checkedWords(n);
    },
    requests: (slug: string) => [...(recorded.get(slug) ?? [])],
    streams: (slug: string) => (streamed.get(slug) ?? []).map((s) => ({ ...s })),
    reset: () => {
      faults.clear();
      recorded.clear();
      streamed.clear();
      latency = startLatency;
      stream = { ...startStream };
      words = startWords;
    },
  };

  const { server, shutdown } = createSimServer({
    ...control,
    takeFault: (slug, streaming) => faults.take(slug, streaming),
    latencyMs: () => latency,
    replyWords: () => words,
    record: (slug, request) => push(recorded, slug, request),
    recordStream: (slug, record) => push(streamed, slug, record),
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

  return {
    url,
    baseUrl(format: WireFormat, slug: string): string {
      const adapter = FORMATS.find((f) => f.format === format);
      if (!adapter) throw new Error(`unknown wire format ${String(format)}`);
      return adapter.baseUrl(url, slug);
    },
    ...control,
    close: shutdown,
  };
}
