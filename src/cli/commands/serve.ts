import type { Config } from '../../config/index.js';
import { createServer, NO_AUTO_PROVIDER, type Server } from '../../http/server.js';
import { DYNAMIC_FOR_MS, governHeapGrowth, MAX_MARK_COMPACT_SHARE } from '../../runtime/heap-growth.js';
import { FIXED_GROWING_PERCENT } from '../../runtime/v8-tuning.js';
import { CliError } from '../cli-error.js';
import type { Output } from '../output.js';

/**
 * Stops the server on SIGTERM/SIGINT: stop accepting, finish and settle in-flight requests, close the
 * store. A second signal exits at once.
 */
export function shutdownOnSignals(server: Server, onClosed: () => Promise<void> = async () => {}): void {
  let closing = false;
  const stop = (signal: NodeJS.Signals) => {
    if (closing) process.exit(1);
    closing = true;
    server.app.log.info({ signal }, 'shutting down: draining in-flight requests');
    server
      .close()
      .then(onClosed)
      .then(
        () => process.exit(0),
        (err: unknown) => {
          server.app.log.error({ err }, 'shutdown failed');
          process.exit(1);
        },
      );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

/**
 * Fixes V8's growing factor while the server's mark-compacts are cheap and hands it back to V8 for a while
 * when they are not (src/cli/heap-growth.ts); each change is logged at debug level.
 */
export function governServerHeap(server: Server): void {
  governHeapGrowth((mode) =>
    server.app.log.debug(
      { mode },
      mode === 'fixed'
        ? `heap growth: factor fixed at ${1 + FIXED_GROWING_PERCENT / 100}`
        : `heap growth: V8's own factor for ${DYNAMIC_FOR_MS / 1000} s (mark-compacts took over ${MAX_MARK_COMPACT_SHARE * 100}% of the time)`,
    ),
  );
}

/**
 * Starts listening. When it cannot (the port is taken, …), the server is closed — its store, the
 * database's server lock, its pools — so the command ends with the error instead of lingering, unserving.
 */
export async function listenOrClose(server: Server, config: Config): Promise<string> {
  try {
    return await server.listen();
  } catch (err) {
    await server.close().catch(() => undefined);
    const code = (err as { code?: unknown }).code;
    throw new CliError(
      code === 'EADDRINUSE'
        ? `cannot listen on ${config.host}:${config.port}: the address is in use by another process (set PORT or HOST)`
        : `cannot listen on ${config.host}:${config.port}: ${err instanceof Error ? err.message : String(err)}`,
      1,
      'listen_failed',
    );
  }
}

/** Logs, once at start, each setting that matches nothing (a misspelt name), at warn level. */
export function warnAboutSettings(server: Server, warnings: readonly string[]): void {
  for (const warning of warnings) server.app.log.warn(warning);
}

/** `tollgate serve` — the server, in this process. */
export async function serve(
  { config, warnings }: { config: Config; warnings: readonly string[] },
  out: Output,
): Promise<void> {
  const server = await createServer(config);
  const url = await listenOrClose(server, config);
  // Before the ready line: a supervisor may send SIGTERM the moment it reads it, and without a handler
  // the signal would kill the process outright instead of draining it.
  shutdownOnSignals(server);
  governServerHeap(server);
  warnAboutSettings(server, warnings);
  const active = server.registry
    .all()
    .filter((s) => s.active)
    .map((s) => s.provider.name);
  if (active.length === 0) {
    server.app.log.warn(
      'no provider is active: set PROV_<NAME>_API_KEY for at least one (see docs/configuration.md)',
    );
  } else if (!server.registry.autoList.some((n) => active.includes(n))) {
    server.app.log.warn({ auto: server.registry.autoList }, NO_AUTO_PROVIDER);
  }
  out.result(
    { url, active_providers: active },
    `Tollgate listening on ${url} (active providers: ${active.join(', ') || 'none'})`,
  );
}
