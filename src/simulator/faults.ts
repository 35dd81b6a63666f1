import type { SimFault } from './types.js';

/** The fault kinds only a streamed request takes: one that does not stream passes them by, uncounted. */
const STREAM_ONLY: ReadonlySet<SimFault['kind']> = new Set(['cut', 'stall', 'stream_error']);

/** A fault that acts on a stream once it is under way. */
export type StreamFault = Extract<SimFault, { afterChunks: number }>;

export function isStreamFault(fault: SimFault | null): fault is StreamFault {
  return fault !== null && STREAM_ONLY.has(fault.kind);
}

interface Entry {
  fault: SimFault;
  /** Uses left; undefined = until changed. */
  remaining: number | undefined;
}

/** Faults per slug, with the `times` countdown. */
export class FaultBook {
  private readonly entries = new Map<string, Entry>();

  set(slug: string, fault: SimFault | null): void {
    if (fault === null) {
      this.entries.delete(slug);
      return;
    }
    const times = fault.times;
    if (times !== undefined && times <= 0) {
      this.entries.delete(slug);
      return;
    }
    this.entries.set(slug, { fault: { ...fault }, remaining: times });
  }

  /** The fault that applies to this request of `slug` (counting one use), or null. */
  take(slug: string, streaming = false): SimFault | null {
    const entry = this.entries.get(slug);
    if (!entry) return null;
    if (!streaming && STREAM_ONLY.has(entry.fault.kind)) return null;
    if (entry.remaining !== undefined) {
      entry.remaining -= 1;
      if (entry.remaining <= 0) this.entries.delete(slug);
    }
    return entry.fault;
  }

  clear(): void {
    this.entries.clear();
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isNonNegativeInt(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0;
}

function isErrorStatus(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 400 && value <= 599;
}

/** Validates a fault received over the control API; returns an error message when it is not one. */
export function parseFault(value: unknown): SimFault | null | string {
  if (value === null) return null;
  if (!isRecord(value)) return 'fault must be an object or null';
  const times = value.times;
  if (times !== undefined && !isNonNegativeInt(times)) return 'fault.times must be a non-negative integer';
  const t = times === undefined ? {} : { times };
  switch (value.kind) {
    case 'hang':
    case 'reset':
    case 'garbage':
    case 'null':
    case 'no_choices':
    case 'no_usage':
      return { kind: value.kind, ...t };
    case 'status': {
      const { status, message, retryAfter } = value;
      if (!Number.isInteger(status) || (status as number) < 100 || (status as number) > 599) {
        return 'fault.status must be an HTTP status code';
      }
      if (message !== undefined && typeof message !== 'string') return 'fault.message must be a string';
      if (retryAfter !== undefined && !isNonNegativeInt(retryAfter)) {
        return 'fault.retryAfter must be a non-negative integer';
      }
      return {
        kind: 'status',
        status: status as number,
        ...(message === undefined ? {} : { message }),
        ...(retryAfter === undefined ? {} : { retryAfter }),
        ...t,
      };
    }
    case 'usage': {
      const { promptTokens, completionTokens, cacheReadTokens, cacheWriteTokens, deepseek } = value;
      if (!isNonNegativeInt(promptTokens) || !isNonNegativeInt(completionTokens)) {
        return 'fault.promptTokens and fault.completionTokens must be non-negative integers';
      }
      const read = cacheReadTokens ?? 0;
      const write = cacheWriteTokens ?? 0;
      if (!isNonNegativeInt(read) || !isNonNegativeInt(write) || read + write > promptTokens) {
        return 'fault.cacheReadTokens and fault.cacheWriteTokens must be non-negative integers within promptTokens';
      }
      if (deepseek !== undefined && typeof deepseek !== 'boolean') return 'fault.deepseek must be a boolean';
      return {
        kind: 'usage',
        promptTokens,
        completionTokens,
        ...(read > 0 ? { cacheReadTokens: read } : {}),
        ...(write > 0 ? { cacheWriteTokens: write } : {}),
        ...(deepseek === true ? { deepseek } : {}),
        ...t,
      };
    }
    case 'slow': {
      if (!isNonNegativeInt(value.delayMs)) return 'fault.delayMs must be a non-negative integer';
      return { kind: 'slow', delayMs: value.delayMs, ...t };
    }
    case 'cut':
    case 'stall': {
      if (!isNonNegativeInt(value.afterChunks)) return 'fault.afterChunks must be a non-negative integer';
      return { kind: value.kind, afterChunks: value.afterChunks, ...t };
    }
    case 'stream_error': {
      const { afterChunks, status, message } = value;
      if (!isNonNegativeInt(afterChunks)) return 'fault.afterChunks must be a non-negative integer';
      if (status !== undefined && !isErrorStatus(status)) return 'fault.status must be 400–599';
      if (message !== undefined && typeof message !== 'string') return 'fault.message must be a string';
      return {
        kind: 'stream_error',
        afterChunks,
        ...(status === undefined ? {} : { status }),
        ...(message === undefined ? {} : { message }),
        ...t,
      };
    }
    default:
      return `unknown fault kind ${JSON.stringify(value.kind)}`;
  }
}
