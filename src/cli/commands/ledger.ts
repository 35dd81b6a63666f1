import { formatNano } from '../../money/money.js';
import type { LedgerProblem, LedgerReport } from '../../store/types.js';
import { withStore } from '../context.js';
import type { Output } from '../output.js';

/**
 * `tollgate ledger check` — exits non-zero when any account breaks the ledger invariant, or received more
 * unbilled service (shortfalls) than `LEDGER_SHORTFALL_ALLOWANCE_USD` allows (none by default).
 */
export async function ledgerCheck(out: Output): Promise<number> {
  return withStore(async (store, config) => {
    const report = await store.ledgerCheck({ shortfallAllowanceNano: config.ledgerShortfallAllowanceNano });
    out.result(
      {
        ok: report.ok,
        accounts: report.accounts,
        problems: report.problems,
        shortfalls: report.shortfalls,
        shortfallAllowanceNano: report.shortfallAllowanceNano,
      },
      humanReport(report),
    );
    return report.ok ? 0 : 1;
  });
}

function humanReport(report: LedgerReport): string {
  const lines = report.ok
    ? [
        `Ledger OK: ${report.accounts} accounts, credits = balance + open holds + charges for each, and their spend today and this month as charged.`,
      ]
    : [
        report.problems.length > 0
          ? `Ledger PROBLEMS in ${report.problems.length} of ${report.accounts} accounts:`
          : `Ledger PROBLEMS: unbilled service beyond the allowance (${report.accounts} accounts checked):`,
        ...report.problems.map(problemLine),
      ];
  if (report.shortfalls.length > 0) {
    const allowance = `$${formatNano(report.shortfallAllowanceNano)} per account (LEDGER_SHORTFALL_ALLOWANCE_USD)`;
    lines.push(`Unbilled service (served, not fully charged), allowance ${allowance}:`);
    for (const s of report.shortfalls) {
      const over = s.shortfallNano > report.shortfallAllowanceNano ? ' — over the allowance' : '';
      lines.push(
        `  ${s.email} (${s.accountId}): ${s.requests} ${s.requests === 1 ? 'request' : 'requests'}, $${formatNano(s.shortfallNano)} not charged${over}`,
      );
    }
  }
  return lines.join('\n');
}

function problemLine(p: LedgerProblem): string {
  if (p.spend) {
    return `  ${p.email} (${p.accountId}): ${p.reason}; charged today $${formatNano(p.spend.todayNano)} and this month $${formatNano(p.spend.monthNano)}, the counters say $${formatNano(p.spend.countedTodayNano)} and $${formatNano(p.spend.countedMonthNano)} (money consistent)`;
  }
  if (p.shortfall) {
    const requests = `${p.shortfall.requests} served ${p.shortfall.requests === 1 ? 'request' : 'requests'}`;
    return `  ${p.email} (${p.accountId}): ${p.reason}; $${formatNano(p.shortfall.shortfallNano)} not charged for ${requests}, beyond the allowance (money consistent)`;
  }
  return `  ${p.email} (${p.accountId}): ${p.reason}; credits $${formatNano(p.creditsNano)}, balance $${formatNano(p.balanceNano)}, open holds $${formatNano(p.openHoldsNano)}, charges $${formatNano(p.chargesNano)}, discrepancy $${formatNano(p.discrepancyNano)}`;
}
