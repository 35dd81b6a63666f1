// Child process of test/resilience/slow-clients.test.ts: opens many raw TCP connections to the gateway,
// sends each request's head, then the rest one piece per tick and never all of it (a slow body: one more
// byte; slow headers: one more header line; silent: nothing at all). It runs in a process of its own, at
// the lowest priority, so that the clients' work (and the kernel's on their behalf) competes as little as
// possible with the server's on a small machine: the attackers' CPU would be elsewhere.
//
// First message from the parent: { port, connections: [{ head, drip }], tickMs, concurrency (connections
// opened at a time), headsAtOnce, giveUpMs }. With headsAtOnce the heads all go out together once every
// connection is open, so their timeouts run from about the same moment; otherwise each as soon as its
// connection is open. Sends back:
// - { type: 'ready', at } once every connection is open and has its head sent;
// - { type: 'settled', at } once no connection has closed for SETTLE_MS after that;
// - { type: 'done', results: [{ connectedAt, startedAt, closedAt, response, error }] } when every
//   connection is closed (or giveUpMs after 'ready', those still open then being closed here, with
//   closedAt null).
import { connect } from 'node:net';

const setup = await new Promise((resolve) => process.once('message', resolve));
const post = (message) => process.send(message);

const SETTLE_MS = 300;
const { port, connections, tickMs, concurrency, headsAtOnce, giveUpMs } = setup;
const results = connections.map(() => ({
  connectedAt: 0,
  startedAt: 0,
  closedAt: null,
  response: '',
  error: null,
}));
const sockets = new Array(connections.length);
let open = 0;
let ready = false;
let finished = false;
let lastClose = 0;
let dripTimer;
let giveUpTimer;
let settleTimer;

function finish() {
  if (finished) return;
  finished = true;
  clearInterval(dripTimer);
  clearTimeout(giveUpTimer);
  clearInterval(settleTimer);
  for (const socket of sockets) socket?.destroy();
  post({ type: 'done', results });
}

function sendHead(i) {
  results[i].startedAt = Date.now();
  if (connections[i].head) sockets[i].write(connections[i].head);
}

function openOne(i) {
  return new Promise((resolve) => {
    const result = results[i];
    const socket = connect({ port, host: '127.0.0.1' });
    sockets[i] = socket;
    open++;
    socket.setNoDelay(true);
    socket.on('connect', () => {
      result.connectedAt = Date.now();
      if (!headsAtOnce) sendHead(i);
      resolve();
    });
    socket.on('data', (chunk) => {
      if (result.response.length < 1024) result.response += chunk.toString('latin1');
    });
    socket.on('error', (err) => {
      result.error ??= err.code ?? String(err);
      resolve();
    });
    socket.on('close', () => {
      // Closed here at the give-up: not closed by the server.
      if (!finished) result.closedAt = Date.now();
      sockets[i] = undefined;
      open--;
      lastClose = Date.now();
      if (open === 0 && ready) finish();
    });
  });
}

// Each connection sends its next piece once per tick, at its own moment within the tick, as independent
// clients would (not all in the same millisecond).
const SLOT_MS = 10;
const slots = Math.max(1, Math.round(tickMs / SLOT_MS));
let slot = 0;
dripTimer = setInterval(() => {
  for (let i = slot; i < sockets.length; i += slots) {
    const socket = sockets[i];
    const drip = connections[i].drip;
    if (socket?.writable && drip && results[i].startedAt > 0) socket.write(drip);
  }
  slot = (slot + 1) % slots;
}, SLOT_MS);

// At most `concurrency` connections being opened at once: more at a time overflow the server's accept
// queue on a small machine, and the handshakes it drops are retried a second later.
let next = 0;
await Promise.all(
  Array.from({ length: Math.min(concurrency, connections.length) }, async () => {
    while (next < connections.length) await openOne(next++);
  }),
);

if (headsAtOnce) for (let i = 0; i < connections.length; i++) if (sockets[i]?.writable) sendHead(i);
ready = true;
lastClose = Date.now();
post({ type: 'ready', at: Date.now() });
settleTimer = setInterval(() => {
  if (Date.now() - lastClose < SETTLE_MS) return;
  clearInterval(settleTimer);
  post({ type: 'settled', at: Date.now() });
}, 50);
giveUpTimer = setTimeout(finish, giveUpMs);
if (open === 0) finish();
