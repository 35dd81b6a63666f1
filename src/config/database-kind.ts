/** The databases Tollgate can keep its data in. */
export type DatabaseKind = 'sqlite' | 'postgres';

/**
 * Which database a DATABASE_URL names — `sqlite:…` the embedded store, `postgres://…` or `postgresql://…`
 * PostgreSQL — or undefined when it names neither. The one place that tells them apart.
 */
export function databaseKindOf(url: string): DatabaseKind | undefined {
  if (url.startsWith('sqlite:')) return 'sqlite';
  if (/^postgres(ql)?:\/\//.test(url)) return 'postgres';
  return undefined;
}
