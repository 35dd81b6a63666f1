import type { Attempt, Hold } from '../billing/billing.js';
import { GatewayError } from '../errors.js';
import type { SseEvent } from '../providers/sse-decoder.js';
import type {
  ChatResult,
  ChoiceResult,
  StreamDelta,
  StreamParser,
  UpstreamChatRequest,
  UpstreamUsage,
} from '../providers/types.js';
import { UpstreamError } from '../providers/types.js';
import type { UpstreamEventStream } from '../providers/upstream-stream-call.js';
import { type Opening, openCall } from './call.js';
import { callSpec, promptBeyondBound, usageProblem } from './call-spec.js';
import type { GatewayDeps, StreamCut } from './deps.js';
import { settleCall } from './settle.js';
import { StreamAnswer } from './stream-answer.js';
import type { ChatCompletion, ChatRequest, RequestContext, StreamOutcome, StreamSink } from './types.js';
import { toGatewayError } from './upstream-failure.js';

/** An upstream whose stream has produced its first deltas: from here on the call is this provider's. */
interface OpenStream {
  request: UpstreamChatRequest;
  dropped: string[];
  parser: StreamParser;
  /** The upstream's events still to read (none for an upstream that answered with one JSON body). */
  events: AsyncIterator<SseEvent> | undefined;
  close: () => void;
  /** Empty only when the client left after the upstream's stream began but before its first delta. */
  first: StreamDelta[];
  /** A JSON answer (the upstream ignored `stream`): its usage and model, read whole. */
  whole?: ChatResult;
}

/**
 * A streamed call: the one call path (`openCall`), where opening an upstream means reading its stream until
 * the first delta — nothing has reached the client before that, so failover is still possible. Then the
 * deltas are relayed as they come, at the client's pace, and the call is settled when the stream ends:
 * from the upstream's usage, or (no usage, a cut, the client gone) from the tokens of what arrived —
 * reasoning included — never above the hold. A client that leaves after the upstream's stream began but
 * before its first delta gets nothing, and the call is settled the same way.
 */
export async function streamCall(
  deps: GatewayDeps,
  ctx: RequestContext,
  req: ChatRequest,
  sink: StreamSink,
): Promise<StreamOutcome> {
  const deadline = ctx.startedAt + deps.config.streamTimeoutMs;
  const opened = await openCall(deps, ctx, req, deadline, streamOpening(deps, req, sink));
  return relay(deps, ctx, req, opened.hold, opened.attempt, opened.answer, sink);
}

/** Opens an upstream's stream and reads it until its first delta. */
function streamOpening(deps: GatewayDeps, req: ChatRequest, sink: StreamSink): Opening<OpenStream> {
  const { upstream, adapterFor, observer } = deps;
  return {
    stream: true,
    callerGone: () => sink.clientGone,
    async open({ provider, cap }, remaining) {
      const adapter = adapterFor(provider.wireFormat);
      const started = performance.now();
      let stream: UpstreamEventStream | undefined;
      // A client that leaves before the first delta ends the upstream call too: nothing is charged when the
      // upstream's stream had not begun, the prompt and the reasoning so far when it had.
      const abandon = new AbortController();
      sink.onClientGone(() => abandon.abort());
      try {
        const request: UpstreamChatRequest = { ...callSpec(req, provider), maxTokens: cap };
        const httpRequest = adapter.buildRequest(provider, request, { stream: true });
        const dropped = httpRequest.dropped ?? [];
        const result = await upstream.openStream(httpRequest, {
          firstByteTimeoutMs: Math.min(provider.firstByteTimeoutMs, remaining),
          idleTimeoutMs: provider.streamIdleTimeoutMs,
          deadlineMs: remaining,
          connectTimeoutMs: provider.connectTimeoutMs,
          signal: abandon.signal,
        });
        let opened: OpenStream;
        if (result.kind === 'response') {
          // A non-2xx answer throws here (classified by status); a 2xx JSON answer is relayed as one piece.
          const whole = adapter.parseResponse(provider, result.response, request);
          opened = {
            request,
            dropped,
            parser: adapter.streamParser(provider, request),
            events: undefined,
            close: () => {},
            first: deltasOf(whole.choices),
            whole,
          };
        } else {
          stream = result;
          const parser = adapter.streamParser(provider, request);
          const events = result.events[Symbol.asyncIterator]();
          const read = { events: 0 };
          let first: StreamDelta[];
          try {
            first = await firstDeltas(parser, events, read);
          } catch (err) {
            // The upstream accepted the call and its answer began (its start, its reasoning) before the
            // client left: it bills the prompt and what it generated, so the call is settled as any other
            // hang-up.
            if (!sink.clientGone || read.events === 0) throw err;
            first = [];
          }
          opened = { request, dropped, parser, events, close: result.close, first };
        }
        if (opened.first.length > 0) {
          observer?.streamStarted?.(provider.name, (performance.now() - started) / 1000);
        }
        return opened;
      } catch (err) {
        stream?.close();
        throw err;
      }
    },
  };
}

/**
 * Reads events until one carries a delta; a stream that ends or fails first is the upstream's failure.
 * `read.events` counts the events read.
 */
async function firstDeltas(
  parser: StreamParser,
  events: AsyncIterator<SseEvent>,
  read: { events: number },
): Promise<StreamDelta[]> {
  for (;;) {
    const next = await events.next();
    if (next.done === true) {
      throw new UpstreamError('bad_response', 'upstream stream ended before any of the answer arrived');
    }
    read.events += 1;
    const deltas = parser.event(next.value.data, next.value.name);
    if (deltas.length > 0) return deltas;
    if (parser.done()) throw new UpstreamError('bad_response', 'upstream stream ended with an empty answer');
  }
}

/** A whole answer as the deltas of one event (a JSON answer to a stream request; a replay). */
export function deltasOf(choices: readonly ChoiceResult[]): StreamDelta[] {
  const deltas: StreamDelta[] = [];
  choices.forEach((choice, index) => {
    if (choice.text !== null) deltas.push({ type: 'text', choice: index, text: choice.text });
    if (choice.refusal !== undefined) deltas.push({ type: 'refusal', choice: index, text: choice.refusal });
    choice.toolCalls.forEach((call, i) => {
      deltas.push({
        type: 'tool_call',
        choice: index,
        index: i,
        id: call.id,
        name: call.name,
        arguments: call.arguments,
      });
    });
    if (choice.logprobs) deltas.push({ type: 'logprobs', choice: index, logprobs: choice.logprobs });
    deltas.push({ type: 'finish', choice: index, reason: choice.finishReason });
  });
  return deltas;
}

/** Relays the opened stream to the client, then settles the call by how the stream ended. */
async function relay(
  deps: GatewayDeps,
  ctx: RequestContext,
  req: ChatRequest,
  hold: Hold,
  attempt: Attempt,
  opened: OpenStream,
  sink: StreamSink,
): Promise<StreamOutcome> {
  const { provider } = attempt;
  const { parser, events } = opened;
  const answer = new StreamAnswer();
  // The operator stops paying for tokens nobody reads: the upstream call is aborted as the client leaves.
  sink.onClientGone(opened.close);
  sink.begin({
    provider: provider.name,
    model: parser.model() ?? provider.model,
    droppedParams: opened.dropped,
  });
  answer.add(opened.first);
  let failure: UpstreamError | undefined;
  let internal: unknown;
  try {
    const wait = sink.send(opened.first);
    if (wait) await wait;
    while (events !== undefined && !sink.clientGone) {
      const next = await events.next();
      if (next.done === true) break;
      const deltas = parser.event(next.value.data, next.value.name);
      if (deltas.length === 0) continue;
      answer.add(deltas);
      const pause = sink.send(deltas);
      if (pause) await pause;
    }
  } catch (err) {
    // An error of the gateway's own still ends the stream billed for what it delivered: never a hold left
    // to expire.
    if (err instanceof UpstreamError) failure = err;
    else internal = err;
  }
  opened.close();

  const completed = opened.whole !== undefined || parser.done();
  const usage: UpstreamUsage = opened.whole?.usage ?? parser.usage();
  const model = opened.whole?.model ?? parser.model();
  const result: ChatResult = {
    choices: answer.choices(),
    usage,
    model,
    reasoning: opened.whole === undefined ? parser.reasoning() : opened.whole.reasoning,
  };
  const problem = usageProblem(result, attempt.cap * req.n);
  if (problem !== undefined) {
    deps.logger.warn(
      { provider: provider.name, problem },
      'upstream stream reported implausible usage; counted instead',
    );
    result.usage = { promptTokens: undefined, completionTokens: undefined };
  }
  const atMostHold = promptBeyondBound(result, attempt.promptBound);
  if (atMostHold) {
    deps.logger.warn(
      { provider: provider.name, promptTokens: result.usage.promptTokens },
      'upstream stream reported a prompt beyond the request bound; charged at most the hold',
    );
  }
  let cut: StreamCut | undefined;
  let error: GatewayError | undefined;
  let ending: StreamOutcome['ending'] = 'completed';
  if (internal !== undefined) {
    ending = 'upstream_cut';
    error = new GatewayError('internal_error', 'The answer broke off because of an error inside Tollgate.');
    cut = {
      status: 'error',
      errorCode: error.code,
      httpStatus: error.status,
      ending,
      message: error.message,
    };
    deps.logger.error({ err: internal, provider: provider.name }, 'streamed answer failed');
  } else if (!completed && sink.clientGone) {
    ending = 'client_gone';
    cut = { status: 'ok', errorCode: null, httpStatus: 200, ending };
  } else if (!completed) {
    ending = 'upstream_cut';
    const cause =
      failure ?? new UpstreamError('bad_response', 'upstream stream ended before the answer was complete');
    const classified = toGatewayError(provider.name, cause);
    error = new GatewayError(
      classified.code,
      `The answer from ${provider.name} broke off before it was complete (${cause.kind}).`,
    );
    cut = {
      status: 'error',
      errorCode: error.code,
      httpStatus: error.status,
      ending,
      message: error.message,
    };
    deps.registry.health.recordFailure(provider.name, {});
    deps.logger.warn({ provider: provider.name, kind: cause.kind, stream: true }, 'upstream stream cut');
  }
  let completion: ChatCompletion;
  try {
    completion = await settleCall(
      deps,
      ctx,
      req,
      hold,
      { attempt, result, dropped: opened.dropped, atMostHold },
      cut,
    );
  } finally {
    // The stream has ended even when its settle fails (the store unavailable): no longer in flight. One
    // whose client left before its first delta was never counted in flight.
    if (opened.first.length > 0) deps.observer?.streamEnded?.(provider.name, ending);
  }
  return error === undefined ? { completion, ending } : { completion, ending, error };
}
