/**
 * The upstream simulator: a local HTTP server (node:http) that speaks the three upstream wire formats —
 * OpenAI Chat Completions, Anthropic Messages, Gemini generateContent — for any provider slug, with
 * deterministic replies, o200k token usage and fault injection. Used by the tests, `tollgate demo` and the
 * benchmark. Imports nothing else from `src/`.
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
import { FaultBook } from './faults.js';
import { createSimServer, FORMATS } from './server.js';
import type { SimFault, SimRequest, Simulator, SimulatorOptions, WireFormat } from './types.js';

export { THINKING_TOKENS } from './formats/anthropic-blocks.js';
export { THOUGHT_TOKENS } from './formats/gemini-request.js';
export { REASONING_TOKENS } from './formats/openai-request.js';
export { AUDIO_TOKENS_PER_KB, audioTokens, FILE_BYTES_PER_TOKEN, fileTokens, IMAGE_TOKENS } from './media.js';
export { toolCallTokens, toolResultTokens, toolsTokens } from './prompt-tokens.js';
export type { SimFault, SimRequest, Simulator, SimulatorOptions, WireFormat } from './types.js';

/** Starts the simulator on `host:port` (default 127.0.0.1, ephemeral port). */
export async function startSimulator(options: SimulatorOptions = {}): Promise<Simulator> {
  const host = options.host ?? '127.0.0.1';
  const startLatency = options.latencyMs ?? 0;
  const faults = new FaultBook();
  const recorded = new Map<string, SimRequest[]>();
  let latency = startLatency;

  const control = {
    setFault: (slug: string, fault: SimFault | null) => faults.set(slug, fault),
    setLatency: (ms: number) => {
      latency = Math.max(0, ms);
    },
    requests: (slug: string) => [...(recorded.get(slug) ?? [])],
    reset: () => {
      faults.clear();
      recorded.clear();
      latency = startLatency;
    },
  };

  const { server, shutdown } = createSimServer({
    ...control,
    takeFault: (slug) => faults.take(slug),
    latencyMs: () => latency,
    record: (slug, request) => {
      const list = recorded.get(slug);
      if (list) list.push(request);
      else recorded.set(slug, [request]);
    },
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
