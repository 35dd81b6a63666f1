import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { findWrk } from '../../bench/wrk.js';

/**
 * Programs some tests need that npm does not install. Outside CI a test file that needs a missing one is
 * skipped with one line, `SKIPPED: nginx not installed (apt-get install nginx) — …`, which the closing
 * summary of `npm test` repeats (scripts/vitest-project-summary.mjs collects the lines); in CI (`CI=true`)
 * the file fails instead, since `.ci/run` installs them all.
 *
 * `TOLLGATE_TEST_PRETEND_MISSING=nginx,wrk,chromium` makes the named programs look missing, to see
 * those skips (and the CI failures) on a machine that has them.
 */
export interface SystemProgram {
  /** Its name in the SKIPPED line and in TOLLGATE_TEST_PRETEND_MISSING. */
  name: string;
  /** The command that installs it on Debian or Ubuntu. */
  install: string;
  /** Its path here, or undefined. */
  find(): string | undefined;
}

function executable(path: string): string | undefined {
  try {
    accessSync(path, constants.X_OK);
    return path;
  } catch {
    return undefined;
  }
}

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const found = dir === '' ? undefined : executable(join(dir, name));
    if (found) return found;
  }
  return undefined;
}

/** The load balancer of scripts/cluster.mjs, found where that script looks: on PATH, then Debian's path. */
export const NGINX: SystemProgram = {
  name: 'nginx',
  install: 'apt-get install nginx',
  find: () => onPath('nginx') ?? executable('/usr/sbin/nginx'),
};

/** The benchmark's closed-loop client, found as bench/wrk.ts finds it. */
export const WRK: SystemProgram = { name: 'wrk', install: 'apt-get install wrk', find: () => findWrk() };

/** Debian's Chromium, for the dashboard's browser tests. */
export const CHROMIUM: SystemProgram = {
  name: 'chromium',
  install: 'apt-get install chromium',
  find: () => executable('/usr/bin/chromium'),
};

/** initdb and postgres of PostgreSQL 15, for the private database servers of the fault tests. */
export const POSTGRES_SERVER: SystemProgram = {
  name: 'postgresql-15',
  install: 'apt-get install postgresql-15',
  find: () =>
    executable('/usr/lib/postgresql/15/bin/postgres')
      ? executable('/usr/lib/postgresql/15/bin/initdb')
      : undefined,
};

/** For the private Redis servers of the fault tests. */
export const REDIS_SERVER: SystemProgram = {
  name: 'redis-server',
  install: 'apt-get install redis-server',
  find: () => onPath('redis-server'),
};

/** The program's path, or undefined when it is missing or named in TOLLGATE_TEST_PRETEND_MISSING. */
export function findProgram(program: SystemProgram): string | undefined {
  const pretend = (process.env.TOLLGATE_TEST_PRETEND_MISSING ?? '').split(',').map((n) => n.trim());
  return pretend.includes(program.name) ? undefined : program.find();
}

/**
 * Whether what the caller is about to test can run: false when a reason is given. Outside CI each reason
 * is printed as one SKIPPED line and the caller skips; in CI this throws, failing the file.
 */
export function canRun(what: string, reasons: readonly string[]): boolean {
  if (reasons.length === 0) return true;
  if (process.env.CI === 'true') {
    throw new Error(`${reasons.join('; ')}: CI must run ${what}.`);
  }
  for (const reason of reasons) console.warn(`SKIPPED: ${reason} — ${what}`);
  return false;
}

/** The reason a missing program gives in a SKIPPED line. */
export function notInstalled(program: SystemProgram): string {
  return `${program.name} not installed (${program.install})`;
}

/** Whether every program is here (see canRun for what happens when one is not). */
export function havePrograms(what: string, ...programs: SystemProgram[]): boolean {
  return canRun(what, programs.filter((p) => findProgram(p) === undefined).map(notInstalled));
}
