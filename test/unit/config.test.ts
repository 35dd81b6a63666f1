import { mkdtempSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, readConfig } from '../../src/config/index.js';
import { editDistance, nearestName, unknownSettingWarnings } from '../../src/config/unknown-settings.js';

describe('loadConfig', () => {
  it('has documented defaults and is frozen', () => {
    const c = loadConfig({});
    expect(c.port).toBe(8080);
    expect(c.databaseUrl).toBe('sqlite:./data/tollgate.db');
    expect(c.providers['prov-claude']).toMatchObject({
      wireFormat: 'anthropic',
      baseUrl: 'https://api.anthropic.com',
      apiKey: undefined,
      inputPriceNano: 3_000_000_000,
      outputPriceNano: 15_000_000_000,
    });
    expect(Object.isFrozen(c)).toBe(true);
    expect(Object.isFrozen(c.providers['prov-qwen'])).toBe(true);
  });

  it('gives one key half the in-flight slots unless KEY_MAX_CONCURRENT says otherwise (0: no limit)', () => {
    expect(loadConfig({}).keyMaxConcurrent).toBe(2048);
    expect(loadConfig({ MAX_CONCURRENT_REQUESTS: '50' }).keyMaxConcurrent).toBe(25);
    expect(loadConfig({ MAX_CONCURRENT_REQUESTS: '1' }).keyMaxConcurrent).toBe(1);
    expect(loadConfig({ MAX_CONCURRENT_REQUESTS: '50', KEY_MAX_CONCURRENT: '0' }).keyMaxConcurrent).toBe(0);
    expect(loadConfig({ KEY_MAX_CONCURRENT: '7' }).keyMaxConcurrent).toBe(7);
  });

  it('waits 30 s for a stream client that takes nothing (STREAM_STALL_TIMEOUT_MS)', () => {
    expect(loadConfig({}).streamStallTimeoutMs).toBe(30_000);
    expect(loadConfig({ STREAM_STALL_TIMEOUT_MS: '500' }).streamStallTimeoutMs).toBe(500);
    expect(() => loadConfig({ STREAM_STALL_TIMEOUT_MS: '10' })).toThrow(ConfigError);
  });

  it('reads per-provider variables, prov-gpt-oss-120b as PROV_GPT_OSS_120B_*', () => {
    const c = loadConfig({
      PROV_GPT_OSS_120B_API_KEY: 'secret',
      PROV_GPT_OSS_120B_BASE_URL: 'http://127.0.0.1:8000/v1/',
      PROV_GPT_OSS_120B_MODEL: 'gpt-oss-120b',
      PROV_GPT_OSS_120B_INPUT_PRICE: '0.000000001',
      PROV_GPT_OSS_120B_OUTPUT_PRICE: '0',
      PROV_GPT_OSS_120B_ENABLED: 'false',
      PROV_GPT_OSS_120B_TIMEOUT_MS: '5000',
    });
    expect(c.providers['prov-gpt-oss-120b']).toMatchObject({
      apiKey: 'secret',
      baseUrl: 'http://127.0.0.1:8000/v1',
      model: 'gpt-oss-120b',
      inputPriceNano: 1,
      outputPriceNano: 0,
      enabled: false,
      timeoutMs: 5000,
    });
  });

  it('prices cache reads and writes by the published ratios of the input price unless set', () => {
    const c = loadConfig({});
    const prices = (name: keyof typeof c.providers) => {
      const p = c.providers[name];
      return [p.inputPriceNano, p.cacheReadPriceNano, p.cacheWritePriceNano];
    };
    expect(prices('prov-claude')).toEqual([3_000_000_000, 300_000_000, 3_750_000_000]);
    expect(prices('prov-deepseek')).toEqual([280_000_000, 28_000_000, 280_000_000]);
    expect(prices('prov-qwen')).toEqual([400_000_000, 80_000_000, 400_000_000]);
    expect(prices('prov-kimi')).toEqual([600_000_000, 150_000_000, 600_000_000]);
    expect(prices('prov-gpt-oss-120b')).toEqual([150_000_000, 75_000_000, 150_000_000]);
    expect(prices('prov-gemini')).toEqual([300_000_000, 30_000_000, 300_000_000]);
    // No known cache discount: the input price.
    expect(prices('prov-llama')).toEqual([590_000_000, 590_000_000, 590_000_000]);
    // The ratio follows an input price set by the operator, rounded up to a whole nanodollar.
    const moved = loadConfig({ PROV_CLAUDE_INPUT_PRICE: '0.000000003' }).providers['prov-claude'];
    expect([moved.cacheReadPriceNano, moved.cacheWritePriceNano]).toEqual([1, 4]);
    const set = loadConfig({
      PROV_CLAUDE_CACHE_READ_PRICE: '0.5',
      PROV_CLAUDE_CACHE_WRITE_PRICE: '6',
    }).providers['prov-claude'];
    expect([set.cacheReadPriceNano, set.cacheWritePriceNano]).toEqual([500_000_000, 6_000_000_000]);
    expect(() => loadConfig({ PROV_KIMI_CACHE_READ_PRICE: '-1' })).toThrow(/PROV_KIMI_CACHE_READ_PRICE/);
  });

  it('SQLITE_CACHE_MB sets the page cache of the serving SQLite connection, 4 MiB unless set', () => {
    expect(loadConfig({}).sqliteCacheMb).toBe(4);
    expect(loadConfig({ SQLITE_CACHE_MB: '64' }).sqliteCacheMb).toBe(64);
    for (const bad of ['0', 'lots', '-2']) {
      expect(() => loadConfig({ SQLITE_CACHE_MB: bad })).toThrow(/SQLITE_CACHE_MB/);
    }
  });

  it('TOKEN_COUNT_THREADS sizes the token counting pool: 1 unless set, never above the CPUs', () => {
    expect(loadConfig({}).tokenCountThreads).toBe(1);
    const cpus = availableParallelism();
    expect(loadConfig({ TOKEN_COUNT_THREADS: '2' }).tokenCountThreads).toBe(Math.min(2, cpus));
    expect(loadConfig({ TOKEN_COUNT_THREADS: '256' }).tokenCountThreads).toBe(cpus);
    for (const bad of ['0', 'many', '-1', '1.5']) {
      expect(() => loadConfig({ TOKEN_COUNT_THREADS: bad })).toThrow(/TOKEN_COUNT_THREADS/);
    }
  });

  it('lists every problem with the variable name', () => {
    try {
      loadConfig({
        PORT: 'eighty',
        PROV_QWEN_INPUT_PRICE: '-1',
        PROV_KIMI_BASE_URL: 'ftp://x',
        LOG_LEVEL: 'loud',
      });
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      const text = (e as ConfigError).problems.join('\n');
      for (const v of ['PORT', 'PROV_QWEN_INPUT_PRICE', 'PROV_KIMI_BASE_URL', 'LOG_LEVEL'])
        expect(text).toContain(v);
    }
  });

  it('reads a JSON config file, which the environment overrides', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-config-'));
    const file = join(dir, 'tollgate.json');
    writeFileSync(
      file,
      JSON.stringify({
        PORT: 9000,
        providers: { 'prov-claude': { apiKey: 'from-file', model: 'claude-x' } },
      }),
    );
    const c = loadConfig({ TOLLGATE_CONFIG: file, PROV_CLAUDE_MODEL: 'claude-env' });
    expect(c.port).toBe(9000);
    expect(c.providers['prov-claude'].apiKey).toBe('from-file');
    expect(c.providers['prov-claude'].model).toBe('claude-env');
    writeFileSync(file, JSON.stringify({ providers: { 'prov-nope': { apiKey: 'x' } } }));
    expect(() => loadConfig({ TOLLGATE_CONFIG: file })).toThrow(/prov-nope/);
  });

  it('PostgreSQL pool and timeouts, Redis prefix and timeout: defaults, ranges, and no password in messages', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      redisUrl: undefined,
      databasePoolMax: 10,
      databaseStatementTimeoutMs: 5000,
      databaseConnectTimeoutMs: 3000,
      redisKeyPrefix: 'tollgate:',
      redisTimeoutMs: 50,
    });
    const set = loadConfig({
      DATABASE_URL: 'postgres://tollgate:pw@db.internal:5432/tollgate',
      REDIS_URL: 'rediss://:pw@cache.internal:6380/2',
      DATABASE_POOL_MAX: '25',
      DATABASE_STATEMENT_TIMEOUT_MS: '2000',
      DATABASE_CONNECT_TIMEOUT_MS: '500',
      REDIS_KEY_PREFIX: 'eu-1:',
      REDIS_TIMEOUT_MS: '20',
    });
    expect(set).toMatchObject({
      databasePoolMax: 25,
      databaseStatementTimeoutMs: 2000,
      databaseConnectTimeoutMs: 500,
      redisKeyPrefix: 'eu-1:',
      redisTimeoutMs: 20,
    });
    try {
      loadConfig({
        DATABASE_URL: 'mysql://tollgate:s3cret@db/x',
        REDIS_URL: 'http://:s3cret@cache',
        DATABASE_POOL_MAX: '0',
        DATABASE_STATEMENT_TIMEOUT_MS: 'soon',
        REDIS_KEY_PREFIX: 'two words',
      });
      expect.unreachable();
    } catch (e) {
      const text = (e as ConfigError).problems.join('\n');
      for (const v of [
        'DATABASE_URL',
        'REDIS_URL',
        'DATABASE_POOL_MAX',
        'DATABASE_STATEMENT_TIMEOUT_MS',
        'REDIS_KEY_PREFIX',
      ])
        expect(text).toContain(v);
      expect(text).not.toContain('s3cret');
    }
  });
});

describe('settings that match nothing', () => {
  it('editDistance counts insertions, deletions and substitutions', () => {
    expect(editDistance('STREAMIN', 'STREAMING')).toBe(1);
    expect(editDistance('PROV_DEEPSEK_API_KEY', 'PROV_DEEPSEEK_API_KEY')).toBe(1);
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('', 'abc')).toBe(3);
    expect(editDistance('same', 'same')).toBe(0);
  });

  it('nearestName: the closest known name, letter case aside, only when near enough to be the one meant', () => {
    const known = ['PORT', 'HOST', 'STREAMING', 'STREAM_TIMEOUT_MS', 'PROV_DEEPSEEK_API_KEY'];
    expect(nearestName('STREAMIN', known)).toBe('STREAMING');
    expect(nearestName('port', known)).toBe('PORT');
    expect(nearestName('PROV_DEEPSEK_API_KEY', known)).toBe('PROV_DEEPSEEK_API_KEY');
    expect(nearestName('PROV_SOMETHING_ELSE_ENTIRELY', known)).toBeUndefined();
    expect(nearestName('XYZ', known)).toBeUndefined();
  });

  it('unknownSettingWarnings: PROV_ variables and config-file keys only, one warning each', () => {
    const known = new Set(['STREAMING', 'PROV_DEEPSEEK_API_KEY']);
    expect(
      unknownSettingWarnings({
        known,
        envNames: ['PROV_DEEPSEK_API_KEY', 'PROV_DEEPSEEK_API_KEY', 'HOME', 'STREAMIN'],
        file: { path: '/etc/tollgate.json', keys: ['STREAMIN', 'STREAMING', 'providers', 'colour'] },
      }),
    ).toEqual([
      'PROV_DEEPSEK_API_KEY is set but matches no setting: did you mean PROV_DEEPSEEK_API_KEY?',
      'TOLLGATE_CONFIG: "STREAMIN" in /etc/tollgate.json matches no setting: did you mean STREAMING?',
      'TOLLGATE_CONFIG: "colour" in /etc/tollgate.json matches no setting: it is ignored (docs/configuration.md lists every setting)',
    ]);
  });

  it('readConfig warns about a misspelt PROV_ variable and config-file key, never fails on them', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-config-'));
    const file = join(dir, 'tollgate.json');
    writeFileSync(file, JSON.stringify({ STREAMIN: 'on', PORT: 9000, providers: {} }));
    const { config, warnings } = readConfig({
      TOLLGATE_CONFIG: file,
      PROV_DEEPSEK_API_KEY: 'sk-x',
      PROV_QWEN_API_KEY: 'sk-y',
      HOME: '/root',
    });
    expect(config.port).toBe(9000);
    expect(config.streaming).toBe(false);
    expect(warnings).toEqual([
      'PROV_DEEPSEK_API_KEY is set but matches no setting: did you mean PROV_DEEPSEEK_API_KEY?',
      `TOLLGATE_CONFIG: "STREAMIN" in ${file} matches no setting: did you mean STREAMING?`,
    ]);
    // Every name the configuration reads is known: a full, correct set of variables warns about nothing.
    const env = {
      PROV_GPT_OSS_120B_API_KEY: 'sk-z',
      PROV_GPT_OSS_120B_BASE_URL: 'http://127.0.0.1:8000/v1',
      PROV_GPT_OSS_120B_MODEL: 'gpt-oss-120b',
      PROV_GPT_OSS_120B_INPUT_PRICE: '1',
      PROV_GPT_OSS_120B_OUTPUT_PRICE: '2',
      PROV_GPT_OSS_120B_ENABLED: 'true',
      PROV_GPT_OSS_120B_TIMEOUT_MS: '5000',
      PROV_GPT_OSS_120B_CONNECT_TIMEOUT_MS: '500',
    };
    expect(readConfig({ ...env, STREAMING: 'on' }).warnings).toEqual([]);
    expect(loadConfig({ PROV_DEEPSEK_API_KEY: 'sk-x' }).providers['prov-deepseek'].apiKey).toBeUndefined();
  });
});
