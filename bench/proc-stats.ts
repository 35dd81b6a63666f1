/**
 * Process figures from Linux `/proc`: CPU time (utime + stime) and peak / current resident memory.
 * Everything returns undefined where `/proc` is not available, so the harness still runs (without those
 * columns) elsewhere.
 *
 * @see https://man7.org/linux/man-pages/man5/proc_pid_stat.5.html
 * @see https://man7.org/linux/man-pages/man5/proc_pid_status.5.html
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

let clockTicks: number | undefined;

/** Clock ticks per second of the `stat` time fields (`getconf CLK_TCK`, 100 on practically every Linux). */
export function clkTck(): number {
  if (clockTicks === undefined) {
    try {
      const n = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
      clockTicks = Number.isInteger(n) && n > 0 ? n : 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/** CPU time used so far, µs: the process's own utime + stime and what it reaped from finished children. */
export function cpuTimeUs(pid: number): number | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may contain spaces: field n is rest[n - 3].
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const ticks = [14, 15, 16, 17].reduce((sum, n) => sum + Number(rest[n - 3]), 0);
  return (ticks * 1e6) / clkTck();
}

/** The CPUs this process may run on (`Cpus_allowed_list` in /proc/self/status, e.g. `1` or `0-1,4`). */
export function allowedCpus(): number[] | undefined {
  let text: string;
  try {
    text = readFileSync('/proc/self/status', 'utf8');
  } catch {
    return undefined;
  }
  const list = /^Cpus_allowed_list:\s*(\S+)/m.exec(text)?.[1];
  if (!list) return undefined;
  const out: number[] = [];
  for (const part of list.split(',')) {
    const [from, to] = part.split('-').map(Number) as [number, number | undefined];
    for (let cpu = from; cpu <= (to ?? from); cpu++) out.push(cpu);
  }
  return out;
}

/** Busy and total time of `cpus` (every CPU when omitted) from /proc/stat, in clock ticks. */
export function cpuTicks(cpus?: readonly number[]): { busy: number; total: number } | undefined {
  let text: string;
  try {
    text = readFileSync('/proc/stat', 'utf8');
  } catch {
    return undefined;
  }
  let busy = 0;
  let total = 0;
  for (const line of text.split('\n')) {
    const match = /^cpu(\d+) (.*)$/.exec(line);
    if (!match || (cpus && !cpus.includes(Number(match[1])))) continue;
    // user nice system idle iowait irq softirq steal …: idle and iowait are the idle time.
    const fields = (match[2] as string).trim().split(/\s+/).map(Number);
    const sum = fields.slice(0, 8).reduce((a, b) => a + b, 0);
    total += sum;
    busy += sum - (fields[3] ?? 0) - (fields[4] ?? 0);
  }
  return total > 0 ? { busy, total } : undefined;
}

/** Measures how busy the given CPUs are between `start()` and the returned function's call (0..1). */
export function busyShare(cpus?: readonly number[]): () => number | undefined {
  const start = cpuTicks(cpus);
  return () => {
    const end = cpuTicks(cpus);
    if (!start || !end || end.total <= start.total) return undefined;
    return (end.busy - start.busy) / (end.total - start.total);
  };
}

function statusField(pid: number, name: 'VmHWM' | 'VmRSS'): number | undefined {
  try {
    const match = readFileSync(`/proc/${pid}/status`, 'utf8').match(
      new RegExp(`^${name}:\\s+(\\d+)\\s+kB`, 'm'),
    );
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** Peak resident set size (VmHWM) in kB. */
export function peakRssKb(pid: number): number | undefined {
  return statusField(pid, 'VmHWM');
}

/** Current resident set size (VmRSS) in kB. */
export function rssKb(pid: number): number | undefined {
  return statusField(pid, 'VmRSS');
}

/** Total CPU time (µs) of every process whose command name is `comm` (e.g. the PostgreSQL server's). */
export function cpuTimeOfCommandUs(comm: string): number | undefined {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return undefined;
  }
  let ticks = 0;
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const text = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const name = text.slice(text.indexOf('(') + 1, text.lastIndexOf(')'));
      if (name !== comm) continue;
      const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
      ticks += Number(rest[14 - 3]) + Number(rest[15 - 3]);
    } catch {
      // the process ended meanwhile
    }
  }
  return (ticks * 1e6) / clkTck();
}
