import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/harness.js';

/**
 * Bodies built to make the gateway walk millions of items, sent over real sockets while `/healthz` is
 * polled: each must be refused for less CPU than `JSON.parse` alone spends building it, and the health
 * check must keep answering meanwhile.
 */

let h: Harness;
let url: string;
beforeAll(async () => {
  h = await startHarness({});
  url = await h.server.listen();
});
afterAll(async () => {
  await h.close();
});

const hi = '{"role":"user","content":"hi"}';
/** One message whose content is 1,390,000 empty parts: 4.17 MB, under the default 4 MiB body limit. */
const CONTENT_PARTS = `{"messages":[{"role":"user","content":[${new Array(1_390_000).fill('{}').join(',')}]}]}`;
/** 400,000 empty tools. */
const TOOLS = `{"messages":[${hi}],"tools":[${new Array(400_000).fill('{}').join(',')}]}`;
/** 99,000 empty parts: few enough values to be parsed, then refused by the content-part limit. */
const PARSED_PARTS = `{"messages":[{"role":"user","content":[${new Array(99_000).fill('{}').join(',')}]}]}`;

function cpuMs(since: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1000;
}

async function post(payload: string): Promise<{ status: number; code: string }> {
  const res = await fetch(`${url}/api/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${h.key}`, 'content-type': 'application/json' },
    body: payload,
  });
  const body = (await res.json()) as { error: { code: string } };
  return { status: res.status, code: body.error.code };
}

describe('a body of millions of items does not hold the gateway', () => {
  it('is refused for less CPU than parsing it would take, and /healthz answers meanwhile', async () => {
    expect(CONTENT_PARTS.length).toBeGreaterThan(4_100_000);
    // Warm the paths once, so the measured round pays no first-call compilation.
    await post(TOOLS);
    await post(PARSED_PARTS);

    // The reference, on this machine and now: building the content-parts body once.
    let start = process.cpuUsage();
    JSON.parse(CONTENT_PARTS);
    const parseOnce = cpuMs(start);

    const bodies = [CONTENT_PARTS, CONTENT_PARTS, TOOLS, PARSED_PARTS];
    const latencies: number[] = [];
    let sending = true;
    start = process.cpuUsage();
    const poll = (async () => {
      while (sending) {
        const t = performance.now();
        const res = await fetch(`${url}/healthz`);
        await res.text();
        latencies.push(performance.now() - t);
        expect(res.status).toBe(200);
      }
    })();
    const answers = await Promise.all(bodies.map(post));
    sending = false;
    await poll;
    const spent = cpuMs(start);

    expect(answers).toEqual([
      { status: 413, code: 'request_too_large' },
      { status: 413, code: 'request_too_large' },
      { status: 413, code: 'request_too_large' },
      { status: 400, code: 'invalid_messages' },
    ]);
    // All four bodies, received, refused, and the health checks between them, for less CPU than one
    // JSON.parse of one of them (this process sends them too).
    expect(spent).toBeLessThan(parseOnce);
    expect(latencies.length).toBeGreaterThan(0);
    latencies.sort((a, b) => a - b);
    const p99 = latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * 0.99))] as number;
    // Generous: a body walked item by item held every request for seconds.
    expect(p99).toBeLessThan(1000);
  });
});
