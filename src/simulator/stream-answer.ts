/**
 * Answers a request that asked for a stream: the same answer and usage as the non-stream reply, cut into
 * pieces by the format's streamer, recorded per slug and written at the configured pace (`stream-writer.ts`).
 */
import type { ServerResponse } from 'node:http';
import type { Answer } from './answer.js';
import { isStreamFault } from './faults.js';
import type { Conversation, Usage } from './formats/shared.js';
import type { FormatStreamer, StreamAsk } from './stream-plan.js';
import { pumpStream } from './stream-writer.js';
import type { SimFault, SimStream, StreamSettings } from './types.js';

export interface StreamCall {
  streamer: FormatStreamer;
  slug: string;
  path: string;
  conv: Conversation;
  answer: Answer;
  usage: Usage | null;
  ask: StreamAsk;
  fault: SimFault | null;
  settings: StreamSettings;
  /** Keeps the record where the tests read it. */
  record(stream: SimStream): void;
  closing(): boolean;
}

export function streamAnswer(res: ServerResponse, call: StreamCall): Promise<void> {
  const { streamer, ask, fault } = call;
  const plan = streamer.plan({
    slug: call.slug,
    conv: call.conv,
    answer: call.answer,
    usage: call.usage,
    ask,
    pieces: call.settings.chunks,
    noChoices: fault?.kind === 'no_choices',
  });
  const record: SimStream = {
    path: call.path,
    startedAt: Date.now(),
    piecesPlanned: plan.steps.length,
    piecesSent: 0,
    outcome: 'open',
    closedEarlyAt: null,
    endedAt: null,
  };
  call.record(record);
  if (res.destroyed) {
    // The client left during the latency: the stream closed before it started.
    record.outcome = 'client_closed';
    record.closedEarlyAt = record.startedAt;
    record.endedAt = record.startedAt;
    return Promise.resolve();
  }
  res.writeHead(200, { 'content-type': streamer.contentType(ask), 'cache-control': 'no-cache' });
  const streamFault = isStreamFault(fault) ? fault : null;
  return pumpStream(res, {
    plan,
    perSecond: call.settings.chunksPerSecond,
    fault: streamFault,
    errorFrame: (sent) =>
      streamer.errorFrame(
        ask,
        sent,
        streamFault?.kind === 'stream_error' ? streamFault.status : undefined,
        streamFault?.kind === 'stream_error' ? streamFault.message : undefined,
      ),
    record,
    closing: call.closing,
  });
}
