import { describe, expect, it } from 'vitest';
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
