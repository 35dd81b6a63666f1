/**
 * The benchmark's targets by name, and their labels in tables. A module of its own, with no side effects:
 * the report (and its test) need the names without `targets.ts`, which starts servers, and
 * `processes.ts`, which installs the harness's exit handlers.
 */
export type TargetName = 'sim' | 'bare' | 'sqlite' | 'postgres' | 'portkey';
export const ALL_TARGETS: readonly TargetName[] = ['sim', 'bare', 'sqlite', 'postgres', 'portkey'];

export const TARGET_LABELS: Record<TargetName, string> = {
  sim: '(1) upstream simulator',
  bare: '(2) bare undici proxy',
  sqlite: '(3) Tollgate · SQLite',
  postgres: '(4) Tollgate · PostgreSQL + Redis',
  portkey: '(5) Portkey gateway',
};
