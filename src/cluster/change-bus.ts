import { Redis } from 'ioredis';
import type { RedisLink } from './redis-link.js';

/** What one instance tells the others. */
export type ClusterEvent =
  /** A key was revoked: drop it from every key cache now (named by its id, or by its SHA-256). */
  | { kind: 'key_revoked'; keyId: string }
  | { kind: 'key_revoked'; keyHash: string }
  /** An account changed (disabled, role): drop its keys from every key cache now. */
  | { kind: 'account_changed'; accountId: string }
  /** A provider's circuit opened here: keep traffic off it everywhere for `forMs`. */
  | { kind: 'circuit_opened'; provider: string; forMs: number };

interface Envelope {
  /** The publishing instance; an instance ignores its own messages. */
  from: string;
  event: ClusterEvent;
}

const MAX_ID_LENGTH = 200;

function isId(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= MAX_ID_LENGTH;
}

/** Reads a message from the channel; anything malformed is ignored (`undefined`). */
export function parseEnvelope(message: string): Envelope | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(message);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const { from, event } = parsed as { from?: unknown; event?: unknown };
  if (!isId(from) || typeof event !== 'object' || event === null) return undefined;
  const e = event as Record<string, unknown>;
  if (e.kind === 'key_revoked' && isId(e.keyId)) return { from, event: { kind: e.kind, keyId: e.keyId } };
  if (e.kind === 'key_revoked' && typeof e.keyHash === 'string' && /^[0-9a-f]{64}$/.test(e.keyHash))
    return { from, event: { kind: e.kind, keyHash: e.keyHash } };
  if (e.kind === 'account_changed' && isId(e.accountId))
    return { from, event: { kind: e.kind, accountId: e.accountId } };
  if (
    e.kind === 'circuit_opened' &&
    isId(e.provider) &&
    typeof e.forMs === 'number' &&
    Number.isFinite(e.forMs) &&
    e.forMs > 0
  ) {
    return { from, event: { kind: e.kind, provider: e.provider, forMs: e.forMs } };
  }
  return undefined;
}

/**
 * Redis pub/sub between instances (https://redis.io/docs/latest/develop/interact/pubsub/). Delivery is
 * at most once: a message published while an instance is disconnected never reaches it, so every
 * receiver also keeps its own bound (the key cache's 1 s TTL, the circuit's own failure count), and on
 * every reconnection `onResync` lets it drop what it may have missed.
 */
export class ChangeBus {
  private subscriber: Redis | undefined;

  constructor(
    private readonly link: RedisLink,
    private readonly url: string,
    private readonly channel: string,
    private readonly instanceId: string,
  ) {}

  /** Sends an event to every other instance; false when Redis could not take it (the others rely on their own bounds). */
  async publish(event: ClusterEvent): Promise<boolean> {
    const envelope: Envelope = { from: this.instanceId, event };
    const receivers = await this.link.run((redis) => redis.publish(this.channel, JSON.stringify(envelope)));
    return receivers !== undefined;
  }

  /**
   * Starts listening on a connection of its own (a subscribed connection can send no other commands).
   * Resolves true once subscribed, or false when that took longer than `waitMs` (it goes on trying).
   */
  listen(onEvent: (event: ClusterEvent) => void, onResync: () => void, waitMs: number): Promise<boolean> {
    const subscriber = new Redis(
      this.url,
      this.link.connectionOptions({
        enableOfflineQueue: true,
        maxRetriesPerRequest: null,
        commandTimeout: undefined,
      }),
    );
    this.subscriber = subscriber;
    let connectedBefore = false;
    subscriber.on('ready', () => {
      if (connectedBefore) onResync();
      connectedBefore = true;
    });
    // Errors and reconnection are reported by the command connection; this one just retries.
    subscriber.on('error', () => {});
    subscriber.on('message', (channel: string, message: string) => {
      if (channel !== this.channel) return;
      const envelope = parseEnvelope(message);
      if (envelope && envelope.from !== this.instanceId) onEvent(envelope.event);
    });
    const subscribed = subscriber.subscribe(this.channel).then(
      () => true,
      () => false, // retried by ioredis on reconnection
    );
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), waitMs);
    });
    return Promise.race([subscribed, timeout]).finally(() => clearTimeout(timer));
  }

  close(): void {
    this.subscriber?.disconnect();
  }
}
