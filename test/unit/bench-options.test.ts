import { describe, expect, it, vi } from 'vitest';
import { readFlags } from '../../bench/options.js';

const spec = { env: { type: 'string', help: 'environment' } } as const;

describe('the benchmark scripts --env flag', () => {
  it('reads NAME=value pairs separated by commas', () => {
    const flags = readFlags('test', spec, ['--env', 'METRICS_ENABLED=false, SQLITE_SYNCHRONOUS=FULL']);
    expect(flags.env('env')).toEqual({ METRICS_ENABLED: 'false', SQLITE_SYNCHRONOUS: 'FULL' });
  });

  it('keeps commas inside a value: only a comma before the next NAME= separates', () => {
    const flags = readFlags('test', spec, [
      '--env',
      'ALLOWED_CUSTOM_HOSTS=127.0.0.1,localhost,KEY_CACHE_TTL_MS=500,NOTE=a=b',
    ]);
    expect(flags.env('env')).toEqual({
      ALLOWED_CUSTOM_HOSTS: '127.0.0.1,localhost',
      KEY_CACHE_TTL_MS: '500',
      NOTE: 'a=b',
    });
  });

  it('gives an empty environment without the flag', () => {
    expect(readFlags('test', spec, []).env('env')).toEqual({});
  });
});

describe('the benchmark scripts --only flag', () => {
  const only = { only: { type: 'string', help: 'targets' } } as const;
  const targets = { bare: 1, sqlite: 1, postgres: 1 };

  it('gives the listed targets, or the default without the flag', () => {
    expect(
      readFlags('test', only, ['--only', 'sqlite, postgres']).choices('only', targets, ['bare']),
    ).toEqual(['sqlite', 'postgres']);
    expect(readFlags('test', only, []).choices('only', targets, ['bare', 'sqlite'])).toEqual([
      'bare',
      'sqlite',
    ]);
  });

  it('exits with a usage error naming the allowed targets for one it does not know', () => {
    const exit = vi.spyOn(process, 'exit').mockImplementation((code) => {
      throw new Error(`exit ${String(code)}`);
    });
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      expect(() => readFlags('test', only, ['--only', 'bare,portkey']).choices('only', targets, [])).toThrow(
        'exit 2',
      );
      expect(stderr).toHaveBeenCalledWith('--only: portkey is not one of bare, sqlite, postgres\n');
    } finally {
      exit.mockRestore();
      stderr.mockRestore();
    }
  });
});
