import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions, Level, LogFn } from 'pino';

/**
 * Fastify gives every request a child logger (bound to its request id); pino builds one per call of
 * `child()`, a measurable part of the gateway's CPU per request (`npm run bench:profile`), although a
 * request served well writes no line at all (the access line is at info, the benchmark and most
 * deployments log at warn). This factory hands out a stand-in that builds the pino child only when a line
 * is actually written, so what is logged, and with which bindings, is unchanged.
 */
export function lazyChildLoggerFactory(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  return new LazyChildLogger(logger, bindings, options) as unknown as FastifyBaseLogger;
}

class LazyChildLogger {
  private child_: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  /** The pino child, built on first use. */
  private get real(): FastifyBaseLogger {
    this.child_ ??= this.parent.child(this.bindings, this.options);
    return this.child_;
  }

  get level(): string {
    return this.child_?.level ?? this.options.level ?? this.parent.level;
  }

  set level(level: string) {
    this.real.level = level;
  }

  /** Writes through the child if `level` is enabled; a disabled level builds nothing. */
  private write(level: Level, args: Parameters<LogFn>): void {
    const target = this.child_ ?? (this.enabled(level) ? this.real : undefined);
    (target?.[level] as ((...a: unknown[]) => void) | undefined)?.apply(target, args);
  }

  private enabled(level: Level): boolean {
    const values = (this.parent as unknown as { levels?: { values: Record<string, number> } }).levels?.values;
    const threshold = values?.[this.level];
    const value = values?.[level];
    // Without pino's level table (another logger), always defer to the real child.
    return threshold === undefined || value === undefined || value >= threshold;
  }

  fatal(...args: Parameters<LogFn>): void {
    this.write('fatal', args);
  }
  error(...args: Parameters<LogFn>): void {
    this.write('error', args);
  }
  warn(...args: Parameters<LogFn>): void {
    this.write('warn', args);
  }
  info(...args: Parameters<LogFn>): void {
    this.write('info', args);
  }
  debug(...args: Parameters<LogFn>): void {
    this.write('debug', args);
  }
  trace(...args: Parameters<LogFn>): void {
    this.write('trace', args);
  }
  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.real.child(bindings, options);
  }

  isLevelEnabled(level: string): boolean {
    return this.child_
      ? (this.child_ as unknown as { isLevelEnabled(l: string): boolean }).isLevelEnabled(level)
      : this.enabled(level as Level);
  }
}
