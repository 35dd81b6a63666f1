import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startDashboardHarness } from './dashboard-helpers.js';

const INDEX =
  '<!doctype html><html><head><script type="module" src="/assets/app-1a2b3c.js"></script></head></html>';
let root: string;
let h: Harness;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'tollgate-web-'));
  mkdirSync(join(root, 'assets'));
  writeFileSync(join(root, 'index.html'), INDEX);
  writeFileSync(join(root, 'assets', 'app-1a2b3c.js'), 'console.log("app")');
  writeFileSync(join(root, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
  h = await startDashboardHarness({ webRoot: root });
});
afterAll(async () => {
  await h.close();
  rmSync(root, { recursive: true, force: true });
});

function get(url: string, method: 'GET' | 'POST' = 'GET') {
  return h.server.app.inject({ method, url });
}

describe('the dashboard app at /', () => {
  it('serves index.html at / and at the app paths, never cached, with a strict CSP', async () => {
    for (const path of ['/', '/keys', '/usage?provider=prov-qwen', '/admin/accounts', '/login']) {
      const res = await get(path);
      expect(res.statusCode, path).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.body).toBe(INDEX);
      expect(res.headers['cache-control']).toBe('no-cache');
      const csp = String(res.headers['content-security-policy']);
      expect(csp).toContain("default-src 'self'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
    }
  });

  it('serves hashed assets as immutable', async () => {
    const res = await get('/assets/app-1a2b3c.js');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/javascript/);
    expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect((await get('/favicon.svg')).headers['cache-control']).toBe('no-cache');
  });

  it('keeps the APIs JSON: unknown API paths and other methods are 404s in the error shape', async () => {
    for (const [path, method] of [
      ['/api/v1/nope', 'GET'],
      ['/api/v2', 'GET'],
      ['/dashboard/api/nope', 'GET'],
      ['/keys', 'POST'],
    ] as const) {
      const res = await get(path, method);
      expect(res.statusCode, path).toBe(404);
      expect(JSON.parse(res.body).error.code).toBe('not_found');
    }
    expect(JSON.parse((await get('/healthz')).body)).toEqual({ status: 'ok' });
    expect(JSON.parse((await get('/api/v1/models')).body).error.code).toBe('missing_api_key');
  });

  it('without a built app, / says how to build it', async () => {
    const bare = await startDashboardHarness({ webRoot: join(root, 'missing') });
    try {
      const res = await bare.server.app.inject({ method: 'GET', url: '/' });
      expect(res.statusCode).toBe(404);
      expect(JSON.parse(res.body).error.message).toMatch(/npm run build/);
      expect(
        (await bare.server.app.inject({ method: 'GET', url: '/dashboard/api/session' })).statusCode,
      ).toBe(200);
    } finally {
      await bare.close();
    }
  });
});
