import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, hello, startHarness } from '../helpers/harness.js';

/**
 * Admission (src/api/admission.ts) over real sockets: the slots a request takes are given back however
 * its exchange ends, also when its client leaves while a step of admission is still waiting.
 */

let h: Harness;
let host: string;
let port: number;
beforeAll(async () => {
  h = await startHarness({ env: { KEY_MAX_CONCURRENT: '1' } });
  const url = new URL(await h.server.listen());
  host = url.hostname;
  port = Number(url.port);
});
afterAll(async () => {
  await h.close();
});

/** Resolves once the server has seen the client's socket close and every 'close' listener has run. */
function serverSideClosed(): Promise<void> {
  return new Promise((resolve) => {
    h.server.app.server.once('connection', (socket: Socket) => {
      socket.once('close', () => setImmediate(resolve));
    });
  });
}

describe('admission', () => {
  it("a client that leaves while its key is being looked up gives the key's slot back", async () => {
    const { key } = await h.newAccount('1');
    const store = h.server.store;
    const findKeyByHash = store.findKeyByHash.bind(store);
    let lookupStarted!: () => void;
    const started = new Promise<void>((resolve) => {
      lookupStarted = resolve;
    });
    let releaseLookup!: () => void;
    const released = new Promise<void>((resolve) => {
      releaseLookup = resolve;
    });
    let lookupDone!: () => void;
    const done = new Promise<void>((resolve) => {
      lookupDone = resolve;
    });
    store.findKeyByHash = async (hash) => {
      lookupStarted();
      await released;
      const record = await findKeyByHash(hash);
      setImmediate(lookupDone);
      return record;
    };
    try {
      const closed = serverSideClosed();
      // The key is not cached yet: its record is read from the store, which waits for the gate. The
      // client sends its headers and part of the body, then leaves meanwhile.
      const socket = connect(port, host);
      socket.write(
        'POST /api/v1/chat/completions HTTP/1.1\r\nHost: tollgate\r\n' +
          `Authorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"messa`,
      );
      await started;
      socket.destroy();
      await closed;
      releaseLookup();
      await done;
    } finally {
      store.findKeyByHash = findKeyByHash;
    }
    // KEY_MAX_CONCURRENT=1: the next request of the key is admitted only if the slot was given back.
    const next = await h.chat(hello, { key });
    expect(next.status, JSON.stringify(next.body)).toBe(200);
  });
});
