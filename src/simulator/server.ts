import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { answer as answerOf } from './answer.js';
import { type ControlTarget, handleControl } from './control.js';
import { anthropicFormat } from './formats/anthropic.js';
import { anthropicStreamer } from './formats/anthropic-stream.js';
import { geminiFormat } from './formats/gemini.js';
import { geminiStreamer } from './formats/gemini-stream.js';
import { openaiFormat } from './formats/openai.js';
import { openaiStreamer } from './formats/openai-stream.js';
import {
  type Conversation,
  type FormatAdapter,
  type HttpReply,
  type IncomingCall,
  isRejection,
  type Usage,
} from './formats/shared.js';
import { parseJson, plainHeaders, readBody, sendJson, sendRaw } from './http.js';
import { promptTokens } from './reply.js';
import { streamAnswer } from './stream-answer.js';
import type { FormatStreamer, StreamAsk } from './stream-plan.js';
import type { SimFault, SimRequest, SimStream, WireFormat } from './types.js';

export const FORMATS: readonly FormatAdapter[] = [openaiFormat, anthropicFormat, geminiFormat];

const STREAMERS: Readonly<Record<WireFormat, FormatStreamer>> = {
  'openai-compatible': openaiStreamer,
  anthropic: anthropicStreamer,
  gemini: geminiStreamer,
};

/** The simulator state the HTTP layer reads and records into. */
export interface SimCore extends ControlTarget {
  /** `streaming`: whether the request streams (the stream faults pass other requests by). */
  takeFault(slug: string, streaming: boolean): SimFault | null;
  latencyMs(): number;
  /** Filler words of the usual reply. */
  replyWords(): number;
  record(slug: string, request: SimRequest): void;
  recordStream(slug: string, stream: SimStream): void;
}

export interface SimServer {
  server: Server;
  /** Stops listening, cancels pending delays, destroys every open socket (hung requests included). */
  shutdown(): Promise<void>;
}

/** `/openai/deepseek/v1/chat/completions` → the format, the slug and `/v1/chat/completions`. */
function route(pathname: string): { adapter: FormatAdapter; slug: string; subpath: string } | null {
  const match = /^(\/[^/]+)\/([^/]+)(\/.*)?$/.exec(pathname);
  if (!match) return null;
  const adapter = FORMATS.find((f) => f.prefix === match[1]);
  if (!adapter) return null;
  let slug = match[2] as string;
  try {
    slug = decodeURIComponent(slug);
  } catch {
    // keep the raw segment
  }
  return { adapter, slug, subpath: match[3] ?? '' };
}

export function createSimServer(core: SimCore): SimServer {
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let closing = false;

  function delay(ms: number): Promise<void> {
    if (ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve();
      }, ms);
      timers.add(timer);
    });
  }

  function send(res: ServerResponse, reply: HttpReply): void {
    sendJson(res, reply.status, reply.body, reply.headers);
  }

  /**
   * 200 headers promising more than is sent, part of a JSON body, then the socket is destroyed; for a
   * stream, stream headers and part of a first event.
   */
  function resetConnection(res: ServerResponse, streamType: string | null): void {
    if (streamType === null) {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '4096' });
    } else {
      res.writeHead(200, { 'content-type': streamType, 'cache-control': 'no-cache' });
    }
    const partial =
      streamType === null
        ? '{"id":"sim-reset","object":"chat.completion","choices":[{"index":0,"message":{"content":"Simul'
        : 'data: {"id":"sim-reset","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Simul';
    res.write(partial, () => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        res.socket?.destroy();
      }, 5);
      timers.add(timer);
    });
  }

  async function answer(
    res: ServerResponse,
    adapter: FormatAdapter,
    slug: string,
    conv: Conversation,
    fault: SimFault | null,
    stream: { ask: StreamAsk; path: string } | null,
  ): Promise<void> {
    const answer = answerOf(slug, conv, core.replyWords());
    // Counted only when reported: an upstream that reports no usage is how the gateway's own counting of
    // huge prompts is tested, and counting them here would stall this process first.
    let usage: Usage | null;
    if (fault?.kind === 'usage') {
      usage = {
        promptTokens: fault.promptTokens,
        completionTokens: fault.completionTokens,
        reasoningTokens: 0,
        ...(fault.cacheReadTokens === undefined ? {} : { cacheReadTokens: fault.cacheReadTokens }),
        ...(fault.cacheWriteTokens === undefined ? {} : { cacheWriteTokens: fault.cacheWriteTokens }),
        ...(fault.deepseek === undefined ? {} : { deepseek: fault.deepseek }),
      };
    } else if (fault?.kind === 'no_usage') {
      usage = null;
    } else {
      usage = {
        promptTokens: promptTokens(conv.messageTexts) + conv.extraPromptTokens,
        completionTokens: answer.completionTokens,
        reasoningTokens: answer.reasoningTokens,
      };
    }
    await delay(core.latencyMs() + (fault?.kind === 'slow' ? fault.delayMs : 0));
    if (stream) {
      return streamAnswer(res, {
        streamer: STREAMERS[adapter.format],
        slug,
        path: stream.path,
        conv,
        answer,
        usage,
        ask: stream.ask,
        fault,
        settings: core.streamSettings(),
        record: (record) => core.recordStream(slug, record),
        closing: () => closing,
      });
    }
    if (fault?.kind === 'no_choices' && usage) {
      sendJson(res, 200, adapter.noChoices(slug, conv, usage));
      return;
    }
    sendJson(res, 200, adapter.success(slug, conv, answer, usage));
  }

  async function handleUpstream(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    target: { adapter: FormatAdapter; slug: string; subpath: string },
  ): Promise<void> {
    const { adapter, slug, subpath } = target;
    const result = await readBody(req);
    const headers = plainHeaders(req);
    const body = result.tooLarge ? null : parseJson(result.raw);
    const call: IncomingCall = { subpath, method: req.method ?? '', headers, query: url.searchParams, body };
    const streamer = STREAMERS[adapter.format];
    core.record(slug, { path: url.pathname, headers, body, stream: streamer.requested(call) });
    if (result.tooLarge) return send(res, adapter.error(413, 'Request body is larger than 8 MiB.'));
    const { countTokens } = adapter;
    if (countTokens !== undefined && subpath === countTokens.subpath && req.method === 'POST') {
      const denied = adapter.authenticate(call);
      return send(res, denied ?? countTokens.answer(body, headers));
    }
    const endpoint = adapter.matchEndpoint(subpath);
    if (!endpoint) return send(res, adapter.error(404, `Unknown path ${url.pathname}`));
    if (req.method !== 'POST') {
      const reply = adapter.error(405, `Method ${req.method ?? ''} not allowed; use POST.`);
      return send(res, { ...reply, headers: { allow: 'POST' } });
    }
    const denied = adapter.authenticate(call);
    if (denied) return send(res, denied);
    const conv = adapter.parse(body, endpoint.model, headers);
    if (isRejection(conv)) return send(res, adapter.error(400, conv.rejected, conv.param));
    const asked = streamer.asked(call);
    if (asked !== null && isRejection(asked))
      return send(res, adapter.error(400, asked.rejected, asked.param));
    const stream = asked === null ? null : { ask: asked, path: url.pathname };

    // Faults that answer before any stream starts act on a streamed request as on any other.
    const fault = core.takeFault(slug, stream !== null);
    switch (fault?.kind) {
      case 'hang':
        return; // never answered; close() destroys the socket
      case 'reset':
        return resetConnection(res, stream && streamer.contentType(stream.ask));
      case 'status': {
        const reply = adapter.error(
          fault.status,
          fault.message ?? `Simulated upstream error ${fault.status}.`,
        );
        const headers: Record<string, string> = {};
        if (fault.retryAfter !== undefined) headers['retry-after'] = String(fault.retryAfter);
        return send(res, { ...reply, headers });
      }
      case 'garbage':
        return sendRaw(res, 200, '<html>oops</html>');
      case 'null':
        return sendRaw(res, 200, 'null');
      default:
        return answer(res, adapter, slug, conv, fault, stream);
    }
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://simulator.invalid');
    if (url.pathname.startsWith('/__sim/')) return handleControl(core, req, res, url);
    const target = route(url.pathname);
    if (target) return handleUpstream(req, res, url, target);
    req.resume();
    sendJson(res, 404, { error: { message: `Unknown path ${url.pathname}`, type: 'not_found' } });
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (closing) return;
      const message = err instanceof Error ? err.message : String(err);
      sendJson(res, 500, { error: { message: `simulator failure: ${message}`, type: 'server_error' } });
    });
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  let closed: Promise<void> | undefined;
  function shutdown(): Promise<void> {
    closing = true;
    closed ??= new Promise<void>((resolve) => {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      // Settled once every socket has closed too (the server's close comes first), so that what the
      // streams record of their end is there when close() returns.
      const socketsClosed = [...sockets].map(
        (socket) => new Promise<void>((done) => socket.once('close', () => done())),
      );
      const serverClosed = new Promise<void>((done) => server.close(() => done()));
      server.closeAllConnections();
      for (const socket of sockets) socket.destroy();
      sockets.clear();
      void Promise.all([serverClosed, ...socketsClosed]).then(() => resolve());
    });
    return closed;
  }

  return { server, shutdown };
}
