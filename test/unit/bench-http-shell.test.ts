import { type ChildProcess, spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// bench/http-shell.ts serves the same route twice, on Fastify and on node:http, so that the difference
// of their instruction counts is the framework's share. That holds only if both do the same work and give
// the same answers: checked here on the success path and on the refusals both must make.

const children: ChildProcess[] = [];

function startShell(framework: 'fastify' | 'node'): Promise<string> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'bench/http-shell.ts', '--framework', framework],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  children.push(child);
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const line = out.split('\n').find((l) => l.includes('"url"'));
      if (line) resolve((JSON.parse(line) as { url: string }).url);
    });
    child.once('exit', (code) => reject(new Error(`http-shell (${framework}) exited ${code}`)));
  });
}

const urls: Record<string, string> = {};
beforeAll(async () => {
  [urls.fastify, urls.node] = await Promise.all([startShell('fastify'), startShell('node')]);
}, 30_000);
afterAll(() => {
  for (const child of children) child.kill('SIGTERM');
});

async function post(base: string, body: string, type = 'application/json') {
  const res = await fetch(`${base}/api/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': type, authorization: 'Bearer sk-svc-shell' },
    body,
  });
  return {
    status: res.status,
    type: res.headers.get('content-type'),
    id: res.headers.get('x-request-id'),
    text: await res.text(),
  };
}

describe('the HTTP shells of the framework comparison', () => {
  it('answer a chat completion with the same body, type and a request id', async () => {
    const body = JSON.stringify({ model: 'deepseek', messages: [{ role: 'user', content: 'hi' }] });
    const [fastify, node] = await Promise.all([
      post(urls.fastify as string, body),
      post(urls.node as string, body),
    ]);
    expect(fastify.status).toBe(200);
    expect(node.status).toBe(200);
    expect(node.text).toBe(fastify.text);
    expect(node.type).toBe(fastify.type);
    expect(JSON.parse(node.text)).toHaveProperty('meta.cost.total');
    expect(fastify.id).toMatch(/^req_/);
    expect(node.id).toMatch(/^req_/);
  });

  it.each([
    ['a body that is not JSON', '{"model":', 'application/json', 400],
    ['a prototype key in the body', '{"__proto__":{"x":1}}', 'application/json', 400],
    ['a text body', 'hello', 'text/plain', 415],
  ])('both refuse %s', async (_what, body, type, status) => {
    const [fastify, node] = await Promise.all([
      post(urls.fastify as string, body, type),
      post(urls.node as string, body, type),
    ]);
    expect(fastify.status).toBe(status);
    expect(node.status).toBe(status);
  });
});
