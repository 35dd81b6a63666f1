import { existsSync } from 'node:fs';
import { join } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { GatewayError } from '../errors.js';

export interface DashboardStaticOptions {
  /** The built single-page app (`web/dist`). */
  root: string;
}

/**
 * The page may load only its own scripts, styles and images and talk only to its own origin: no
 * external fonts or CDNs, no inline scripts, no framing.
 */
const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

function securityHeaders(reply: FastifyReply): void {
  reply.header('content-security-policy', CSP);
  reply.header('x-content-type-options', 'nosniff');
  reply.header('x-frame-options', 'DENY');
  reply.header('referrer-policy', 'same-origin');
}

/** Paths that belong to JSON APIs: an unknown one there is a JSON 404, never the app's page. */
const API_PATH = /^\/(api|dashboard\/api)(\/|$)/;

/**
 * Serves the dashboard's built files at `/`: hashed assets cached for a year, `index.html` never cached,
 * and `index.html` for any other GET outside the APIs, so the app's own paths (`/keys`, `/usage`, …)
 * survive a reload.
 */
export async function dashboardStatic(app: FastifyInstance, options: DashboardStaticOptions): Promise<void> {
  app.addHook('onRequest', async (_request, reply) => securityHeaders(reply));

  if (!existsSync(join(options.root, 'index.html'))) {
    app.log.warn({ root: options.root }, 'the dashboard is not built (run npm run build); it is not served');
    app.get('/*', async (request, reply) => {
      if (API_PATH.test(request.url)) return reply.callNotFound();
      throw new GatewayError('not_found', 'The dashboard is not built on this server: run npm run build.');
    });
    return;
  }

  await app.register(fastifyStatic, {
    root: options.root,
    prefix: '/',
    wildcard: false,
    index: false,
    dotfiles: 'ignore',
    cacheControl: false,
    setHeaders(res, path) {
      res.setHeader(
        'cache-control',
        path.includes('/assets/') ? 'public, max-age=31536000, immutable' : 'no-cache',
      );
    },
  });

  app.get('/*', async (request, reply) => {
    if (API_PATH.test(request.url)) return reply.callNotFound();
    reply.header('cache-control', 'no-cache');
    return reply.sendFile('index.html');
  });
}
