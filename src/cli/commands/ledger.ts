import { formatNano } from '../../billing/money.js';
import { withStore } from '../context.js';
import type { Output } from '../output.js';

/** `tollgate ledger check` — exits non-zero when any account breaks the ledger invariant. */
export async function ledgerCheck(out: Output): Promise<number> {
  return withStore(async (store) => {
    const report = await store.ledgerCheck();
    const human = report.ok
      ? `Ledger OK: ${report.accounts} accounts, credits = balance + open holds + charges for each, and their spend today and this month as charged.`
      : [
          `Ledger PROBLEMS in ${report.problems.length} of ${report.accounts} accounts:`,
          ...report.problems.map((p) =>
            p.spend
              ? `  ${p.email} (${p.accountId}): ${p.reason}; charged today $${formatNano(p.spend.todayNano)} and this month $${formatNano(p.spend.monthNano)}, the counters say $${formatNano(p.spend.countedTodayNano)} and $${formatNano(p.spend.countedMonthNano)} (money consistent)`
              : `  ${p.email} (${p.accountId}): ${p.reason}; credits $${formatNano(p.creditsNano)}, balance $${formatNano(p.balanceNano)}, open holds $${formatNano(p.openHoldsNano)}, charges $${formatNano(p.chargesNano)}, discrepancy $${formatNano(p.discrepancyNano)}`,
          ),
        ].join('\n');
    out.result({ ok: report.ok, accounts: report.accounts, problems: report.problems }, human);
    return report.ok ? 0 : 1;
  });
}
