import { describe, expect, it } from 'vitest';
import { databaseKindOf } from '../../src/config/database-kind.js';

describe('databaseKindOf', () => {
  it('names the embedded store for every sqlite: spelling', () => {
    for (const url of ['sqlite:./data/x.db', 'sqlite:/abs/x.db', 'sqlite:///abs/x.db', 'sqlite::memory:'])
      expect(databaseKindOf(url)).toBe('sqlite');
  });

  it('names PostgreSQL for postgres:// and postgresql://', () => {
    expect(databaseKindOf('postgres://u:p@db:5432/tollgate')).toBe('postgres');
    expect(databaseKindOf('postgresql://db/tollgate')).toBe('postgres');
  });

  it('names nothing else', () => {
    for (const url of ['', 'mysql://db/x', 'postgres:db', 'SQLITE:x.db', './data/x.db', 'redis://r:6379'])
      expect(databaseKindOf(url)).toBeUndefined();
  });
});
