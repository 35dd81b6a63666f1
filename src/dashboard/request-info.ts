import type { TLSSocket } from 'node:tls';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config/index.js';
import { GatewayError } from '../errors.js';

/** Cookie name over TLS: `__Host-` makes the browser insist on Secure, Path=/ and no Domain. */
export const SECURE_COOKIE = '__Host-tollgate_session';
/** Cookie name over plain HTTP (localhost, tests): browsers refuse `__Host-` cookies without TLS. */
export const PLAIN_COOKIE = 'tollgate_session';

function firstHeader(value: string | string[] | undefined): string | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  return v?.split(',')[0]?.trim() || undefined;
}

/** Whether the browser reached us over TLS: directly, or through a trusted proxy that says so. */
export function isSecure(request: FastifyRequest, config: Config): boolean {
  if ((request.raw.socket as TLSSocket).encrypted === true) return true;
  return config.trustProxy && firstHeader(request.headers['x-forwarded-proto'])?.toLowerCase() === 'https';
}

/** The client's address: the socket's, or (TRUST_PROXY) the one the proxy appended last. */
export function clientIp(request: FastifyRequest, config: Config): string {
  if (config.trustProxy) {
    const forwarded = request.headers['x-forwarded-for'];
    const list = (Array.isArray(forwarded) ? forwarded.join(',') : (forwarded ?? '')).split(',');
    const last = list[list.length - 1]?.trim();
    if (last) return last;
  }
  return request.raw.socket.remoteAddress ?? 'unknown';
}

/** The origin the dashboard is served from: PUBLIC_URL, or what this request was addressed to. */
export function ownOrigin(request: FastifyRequest, config: Config): string {
  if (config.publicUrl) return config.publicUrl;
  const host =
    (config.trustProxy ? firstHeader(request.headers['x-forwarded-host']) : undefined) ??
    request.headers.host;
  return `${isSecure(request, config) ? 'https' : 'http'}://${host ?? 'localhost'}`;
}

/** The base URL of the OpenAI-compatible API, as the dashboard shows it. */
export function apiBaseUrl(request: FastifyRequest, config: Config): string {
  return `${ownOrigin(request, config)}/api/v1`;
}

export function sessionCookieName(request: FastifyRequest, config: Config): string {
  return isSecure(request, config) ? SECURE_COOKIE : PLAIN_COOKIE;
}

/** The session token from the request's cookie, if any. */
export function sessionTokenOf(request: FastifyRequest, config: Config): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  const name = sessionCookieName(request, config);
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) {
      const value = part.slice(eq + 1).trim();
      return /^[A-Za-z0-9_-]{20,100}$/.test(value) ? value : undefined;
    }
  }
  return undefined;
}

function cookieAttributes(request: FastifyRequest, config: Config, maxAgeSeconds: number): string {
  const secure = isSecure(request, config) ? '; Secure' : '';
  return `Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secure}`;
}

export function setSessionCookie(
  request: FastifyRequest,
  reply: FastifyReply,
  config: Config,
  token: string,
  maxAgeMs: number,
): void {
  const name = sessionCookieName(request, config);
  reply.header(
    'set-cookie',
    `${name}=${token}; ${cookieAttributes(request, config, Math.floor(maxAgeMs / 1000))}`,
  );
}

export function clearSessionCookie(request: FastifyRequest, reply: FastifyReply, config: Config): void {
  const name = sessionCookieName(request, config);
  reply.header('set-cookie', `${name}=; ${cookieAttributes(request, config, 0)}`);
}

/**
 * Refuses a state-changing request a browser sent from another site: `Sec-Fetch-Site` must say
 * same-origin and `Origin` must be ours, when the browser sends them (every current browser does on a
 * POST or DELETE). Requests without either (scripts, curl) still need the session's CSRF token.
 */
export function assertSameOrigin(request: FastifyRequest, config: Config): void {
  const site = firstHeader(request.headers['sec-fetch-site']);
  if (site !== undefined && site !== 'same-origin') {
    throw new GatewayError('csrf_failed', 'Cross-site requests cannot change anything here.');
  }
  const origin = request.headers.origin;
  if (origin !== undefined && origin !== ownOrigin(request, config)) {
    throw new GatewayError('csrf_failed', 'Requests from another origin cannot change anything here.');
  }
}
