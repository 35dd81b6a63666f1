import type { IncomingMessage, ServerResponse } from 'node:http';
import { isIPv4, isIPv6, type Socket } from 'node:net';
import { GatewayError } from '../errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The body this request is still receiving, counted against its address (and key); see PendingBodies. */
    pendingBody: PendingBody | undefined;
  }
}

/** Whether a request announces a body: a non-zero Content-Length, or a chunked one. */
export function announcesBody(raw: IncomingMessage): boolean {
  const length = raw.headers['content-length'];
  return (length !== undefined && length !== '0') || raw.headers['transfer-encoding'] !== undefined;
}

/**
 * The unit an address is counted by: an IPv4 address (IPv4-mapped IPv6 included) as is, an IPv6 address
 * by its /64 — one subscriber usually holds a whole /64, so counting single IPv6 addresses would let it
 * open as many bodies as it likes.
 */
export function addressUnit(address: string): string {
  if (address.startsWith('::ffff:') && isIPv4(address.slice(7))) return address.slice(7);
  const bare = address.split('%')[0] ?? address;
  if (!isIPv6(bare)) return address;
  const [head = '', tail] = bare.split('::');
  const groupsOf = (part: string): string[] => (part === '' ? [] : part.split(':'));
  const front = groupsOf(head);
  // A dotted IPv4 tail (`64:ff9b::192.0.2.1`) stands for two groups.
  const back = groupsOf(tail ?? '').flatMap((g) => (g.includes('.') ? ['0', '0'] : [g]));
  const groups =
    tail === undefined
      ? front
      : [...front, ...Array<string>(8 - front.length - back.length).fill('0'), ...back];
  return `${groups
    .slice(0, 4)
    .map((g) => Number.parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}

/**
 * Counts the request bodies still arriving, per client address and per API key, and refuses a new one
 * past either cap (429 `rate_limit_exceeded`). A body is counted from the moment its headers are in
 * until its last byte is (or its connection closes): a client that sends its bodies slowly can hold only
 * a few of these at once, and nothing else — the process-wide in-flight slot is taken only once a body is
 * in, so slow senders never keep other accounts' calls out.
 */
export class PendingBodies {
  private readonly byAddress = new Map<string, Set<PendingBody>>();
  private readonly byKey = new Map<string, Set<PendingBody>>();
  /** Each connection's counted bodies (ended together when it closes) and its address's unit. */
  private readonly bySocket = new WeakMap<Socket, Connection>();
  private pending = 0;

  constructor(
    readonly keyLimit: number,
    readonly addressLimit: number,
  ) {}

  /** Bodies being received right now. */
  get size(): number {
    return this.pending;
  }

  /** Whether any cap is set (both 0: nothing is counted). */
  get enabled(): boolean {
    return this.keyLimit > 0 || this.addressLimit > 0;
  }

  /**
   * Starts counting the body of `raw` against the client `address`; throws 429 when that address already
   * has `addressLimit` bodies arriving. The count ends when the body is in or the connection closes.
   */
  start(raw: IncomingMessage, response: ServerResponse, address: string): PendingBody {
    const connection = this.connectionOf(raw.socket, address);
    const unit = connection.unit;
    if (unit !== undefined && !hasRoom(this.byAddress.get(unit), this.addressLimit)) {
      throw refusal(
        `Too many request bodies are still arriving from this address (limit ${this.addressLimit}); finish sending one first.`,
      );
    }
    this.pending++;
    const body = new PendingBody(this, raw, unit);
    if (unit !== undefined) addTo(this.byAddress, unit, body);
    // The request's 'close' comes once its body has been read to the end (or it was aborted).
    raw.on('close', body.end);
    // An answered request whose body is known to be complete (or, injected, has no such flag) is done;
    // one still arriving stays counted while Node reads and discards the rest of it.
    response.on('close', () => {
      if (raw.complete !== false) body.end();
    });
    const bodies = connection.bodies;
    bodies.add(body);
    body.onEnd = () => bodies.delete(body);
    return body;
  }

  /**
   * The connection's record, made on its first body: a body Node is still discarding after an early answer
   * never gets its request's 'close' if the connection goes away, so the connection's own 'close' ends it.
   * The address's unit is worked out once per connection (and again only if the address differs, as it may
   * behind a trusted proxy).
   */
  private connectionOf(socket: Socket, address: string): Connection {
    let connection = this.bySocket.get(socket);
    if (connection === undefined) {
      const bodies = new Set<PendingBody>();
      connection = { bodies, address, unit: this.unitOf(address) };
      this.bySocket.set(socket, connection);
      socket.once('close', () => {
        for (const b of bodies) b.end();
      });
    } else if (connection.address !== address) {
      connection.address = address;
      connection.unit = this.unitOf(address);
    }
    return connection;
  }

  private unitOf(address: string): string | undefined {
    return this.addressLimit > 0 ? addressUnit(address) : undefined;
  }

  /** Counts `body` against `keyId` too unless the key has `keyLimit` bodies arriving; false when it has. */
  enterKey(keyId: string, body: PendingBody): boolean {
    if (!hasRoom(this.byKey.get(keyId), this.keyLimit)) return false;
    addTo(this.byKey, keyId, body);
    return true;
  }

  /** Ends the count of one body. */
  leave(body: PendingBody, unit: string | undefined, keyId: string | undefined): void {
    this.pending--;
    if (unit !== undefined) removeFrom(this.byAddress, unit, body);
    if (keyId !== undefined) removeFrom(this.byKey, keyId, body);
  }
}

interface Connection {
  bodies: Set<PendingBody>;
  address: string;
  unit: string | undefined;
}

/**
 * Whether `bodies` has fewer than `limit`. At the limit, the bodies whose last byte is in by now (but not
 * yet read: their request may be waiting on its authentication) are let go first, so that only bodies
 * still arriving count against it.
 */
function hasRoom(bodies: Set<PendingBody> | undefined, limit: number): boolean {
  if (bodies === undefined || bodies.size < limit) return true;
  for (const b of bodies) if (b.arrived) b.end();
  return bodies.size < limit;
}

function addTo(groups: Map<string, Set<PendingBody>>, name: string, body: PendingBody): void {
  const bodies = groups.get(name);
  if (bodies) bodies.add(body);
  else groups.set(name, new Set([body]));
}

function removeFrom(groups: Map<string, Set<PendingBody>>, name: string, body: PendingBody): void {
  const bodies = groups.get(name);
  if (!bodies) return;
  bodies.delete(body);
  if (bodies.size === 0) groups.delete(name);
}

function refusal(message: string): GatewayError {
  return new GatewayError('rate_limit_exceeded', message, { retryAfterSeconds: 1 });
}

/** One body being received (see `PendingBodies.start`); `end` is idempotent. */
export class PendingBody {
  private keyId: string | undefined;
  private ended = false;
  /** Called once, when the count ends. */
  onEnd: () => void = () => {};

  constructor(
    private readonly gate: PendingBodies,
    private readonly raw: IncomingMessage,
    private readonly unit: string | undefined,
  ) {}

  /** Whether the body's last byte has been received (read by the server or not). */
  get arrived(): boolean {
    return this.raw.complete === true;
  }

  /**
   * Counts this body against the API key too (after authentication); throws 429 when the key already has
   * `keyLimit` bodies arriving. A body already in by now is not counted at all.
   */
  forKey(keyId: string): void {
    if (this.ended || this.gate.keyLimit <= 0) return;
    if (this.arrived) {
      this.end();
      return;
    }
    if (!this.gate.enterKey(keyId, this)) {
      throw refusal(
        `Too many request bodies are still arriving for this API key (limit ${this.gate.keyLimit}); finish sending one first.`,
      );
    }
    this.keyId = keyId;
  }

  /** Ends the count (bound: it is passed as a listener as is). */
  readonly end = (): void => {
    if (this.ended) return;
    this.ended = true;
    this.onEnd();
    this.gate.leave(this, this.unit, this.keyId);
  };
}
