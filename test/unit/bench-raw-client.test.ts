import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { RawClient } from '../../bench/raw-http.js';

let server: Server | undefined;
afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

describe("the open-loop generator's client (bench/raw-http.ts)", () => {
  it('closes the sockets that were still connecting when it was closed', async () => {
    const open = new Set<Socket>();
    server = createServer((socket) => {
      open.add(socket);
      socket.on('close', () => open.delete(socket));
      socket.on('error', () => {});
      // Answers every request at once, keep-alive.
      socket.on('data', () => socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok'));
    });
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', () => resolve()));
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    const client = new RawClient(
      {
        host: '127.0.0.1',
        port: address.port,
        path: '/',
        method: 'POST',
        headers: {},
        body: Buffer.from('{}'),
      },
      8,
    );
    // Eight requests open eight sockets; the client is closed before any of them has connected, as at
    // the end of an open-loop run whose last requests were served by sockets that connected first.
    const statuses: (number | undefined)[] = [];
    for (let i = 0; i < 8; i++)
      client.send(Buffer.from('POST / HTTP/1.1\r\nhost: x\r\n'), (s) => statuses.push(s));
    client.close();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(open.size).toBe(0);
  });
});
