import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../src/errors.js';
import { addressUnit, PendingBodies } from '../../src/http/pending-bodies.js';

describe('the unit a client address is counted by (ADDRESS_MAX_PENDING_BODIES)', () => {
  it('an IPv4 address as is, an IPv4-mapped IPv6 address as its IPv4 address', () => {
    expect(addressUnit('203.0.113.7')).toBe('203.0.113.7');
    expect(addressUnit('::ffff:203.0.113.7')).toBe('203.0.113.7');
  });

  it('an IPv6 address by its /64, however it is written', () => {
    expect(addressUnit('2001:db8:1:2:3:4:5:6')).toBe('2001:db8:1:2::/64');
    expect(addressUnit('2001:0db8:0001:0002:ffff::1')).toBe('2001:db8:1:2::/64');
    expect(addressUnit('2001:db8:1:2::')).toBe('2001:db8:1:2::/64');
    expect(addressUnit('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(addressUnit('::1')).toBe('0:0:0:0::/64');
    expect(addressUnit('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(addressUnit('64:ff9b::192.0.2.1')).toBe('64:ff9b:0:0::/64');
    expect(addressUnit('1:2:3::4:192.0.2.1')).toBe('1:2:3:0::/64');
  });

  it('anything else as is', () => {
    expect(addressUnit('unknown')).toBe('unknown');
  });
});

/** A request as far as PendingBodies looks at it: its events, its `complete` flag, its connection. */
function fakeRequest(socket = new EventEmitter()) {
  const raw = Object.assign(new EventEmitter(), { complete: false, socket });
  const response = new EventEmitter();
  return {
    raw,
    socket,
    args: [raw as unknown as IncomingMessage, response as unknown as ServerResponse] as const,
    response,
  };
}

function refusedWith429(fn: () => unknown): void {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).code).toBe('rate_limit_exceeded');
    expect((err as GatewayError).retryAfterSeconds).toBe(1);
    return;
  }
  throw new Error('not refused');
}

describe('PendingBodies', () => {
  it('refuses a body past the address cap; IPv6 addresses of one /64 share it; others are unaffected', () => {
    const gate = new PendingBodies(0, 2);
    gate.start(...fakeRequest().args, '2001:db8:1:2::a');
    gate.start(...fakeRequest().args, '2001:db8:1:2::b');
    refusedWith429(() => gate.start(...fakeRequest().args, '2001:db8:1:2::c'));
    gate.start(...fakeRequest().args, '2001:db8:1:3::a');
    gate.start(...fakeRequest().args, '203.0.113.7');
    expect(gate.size).toBe(4);
  });

  it('a body ends when its request closes, its connection closes, or it is answered once complete', () => {
    const gate = new PendingBodies(0, 10);
    const read = fakeRequest();
    gate.start(...read.args, '203.0.113.7');
    const dropped = fakeRequest();
    gate.start(...dropped.args, '203.0.113.7');
    const answered = fakeRequest();
    gate.start(...answered.args, '203.0.113.7');
    expect(gate.size).toBe(3);
    read.raw.emit('close');
    dropped.socket.emit('close');
    expect(gate.size).toBe(1);
    // Answered early while its body is still arriving: still counted (Node goes on reading it).
    answered.response.emit('close');
    expect(gate.size).toBe(1);
    answered.raw.complete = true;
    answered.raw.emit('close');
    expect(gate.size).toBe(0);
  });

  it('at the cap, bodies that have arrived but are not read yet no longer count', () => {
    const gate = new PendingBodies(0, 2);
    const first = fakeRequest();
    gate.start(...first.args, '203.0.113.7');
    gate.start(...fakeRequest().args, '203.0.113.7');
    refusedWith429(() => gate.start(...fakeRequest().args, '203.0.113.7'));
    first.raw.complete = true;
    gate.start(...fakeRequest().args, '203.0.113.7');
    expect(gate.size).toBe(2);
  });

  it('counts a body against its key once authenticated, unless it has arrived by then', () => {
    const gate = new PendingBodies(2, 0);
    const a = gate.start(...fakeRequest().args, '203.0.113.1');
    const b = gate.start(...fakeRequest().args, '203.0.113.2');
    const c = gate.start(...fakeRequest().args, '203.0.113.3');
    a.forKey('key_1');
    b.forKey('key_1');
    refusedWith429(() => c.forKey('key_1'));
    c.forKey('key_2');
    const arrived = fakeRequest();
    const d = gate.start(...arrived.args, '203.0.113.4');
    arrived.raw.complete = true;
    d.forKey('key_1');
    expect(gate.size).toBe(3);
    a.end();
    gate.start(...fakeRequest().args, '203.0.113.5').forKey('key_1');
  });
});
