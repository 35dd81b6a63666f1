// Child process of test/resilience/health-under-attack.test.ts: the attackers, in a process of their own so
// that their work (sending megabytes, reading answers) does not delay the test process's own measurements.
//
// First message from the parent: { port, loops: [{ path, headers, body }], durationMs }. Each loop is one
// keep-alive connection that sends its request, reads the whole answer, and sends it again at once, until
// `durationMs` has passed since the first message. Sends back { type: 'started', at } when the first
// request goes out and, once every loop has had its last answer, { type: 'done', results: [{ loop,
// status, ms, body (at most its first 600 characters), error }] }.
import { Agent, request } from 'node:http';

const setup = await new Promise((resolve) => process.once('message', resolve));
const { port, loops, durationMs } = setup;
const results = [];

function once(loop, agent) {
  const { path, headers, body } = loops[loop];
  const started = performance.now();
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'POST', headers, agent }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        if (text.length < 600) text += chunk;
      });
      res.on('end', () => {
        results.push({
          loop,
          status: res.statusCode,
          ms: performance.now() - started,
          body: text.slice(0, 600),
        });
        resolve();
      });
      res.on('error', (err) => {
        results.push({ loop, status: 0, ms: performance.now() - started, body: text, error: String(err) });
        resolve();
      });
    });
    req.on('error', (err) => {
      results.push({ loop, status: 0, ms: performance.now() - started, body: '', error: String(err) });
      resolve();
    });
    req.end(body);
  });
}

const until = Date.now() + durationMs;
process.send({ type: 'started', at: Date.now() });
await Promise.all(
  loops.map(async (_, loop) => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    while (Date.now() < until) await once(loop, agent);
    agent.destroy();
  }),
);
process.send({ type: 'done', results }, () => process.disconnect());
