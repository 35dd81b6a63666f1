import { Writable } from 'node:stream';
import type { FastifyBaseLogger } from 'fastify';
import pino from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { lazyChildLoggerFactory } from '../../src/http/lazy-child-logger.js';

function capture(level: string) {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  const logger = pino({ level }, sink);
  const childSpy = vi.spyOn(logger, 'child');
  return { logger: logger as unknown as FastifyBaseLogger, lines, childSpy };
}

describe('lazyChildLoggerFactory', () => {
  it('writes what a pino child would, with its bindings, once a line is written', () => {
    const { logger, lines, childSpy } = capture('info');
    const log = lazyChildLoggerFactory(logger, { reqId: 'req_1' }, {});
    expect(childSpy).not.toHaveBeenCalled();
    log.info({ status: 401 }, 'request refused');
    log.warn('second');
    expect(childSpy).toHaveBeenCalledTimes(1);
    expect(lines.map((l) => [l.reqId, l.msg, l.status])).toEqual([
      ['req_1', 'request refused', 401],
      ['req_1', 'second', undefined],
    ]);
    const grandchild = log.child({ provider: 'p' });
    grandchild.error('third');
    expect(lines.at(-1)).toMatchObject({ reqId: 'req_1', provider: 'p', msg: 'third' });
  });

  it('builds nothing for a level that is off, and follows the level set on it', () => {
    const { logger, lines, childSpy } = capture('warn');
    const log = lazyChildLoggerFactory(logger, { reqId: 'req_2' }, {});
    log.info('not written');
    log.debug('not written');
    expect(childSpy).not.toHaveBeenCalled();
    expect(log.level).toBe('warn');
    log.level = 'info';
    log.info('now written');
    expect(lines.map((l) => [l.reqId, l.msg])).toEqual([['req_2', 'now written']]);
    expect(logger.level).toBe('warn');
  });

  it('takes a route log level from the options', () => {
    const { logger, lines } = capture('warn');
    const log = lazyChildLoggerFactory(logger, { reqId: 'req_3' }, { level: 'debug' });
    log.debug('route debug');
    expect(lines.map((l) => l.msg)).toEqual(['route debug']);
  });
});
