import { type Kysely, sql, type Transaction } from 'kysely';
import { beyondAllowance, discrepancy } from '../ledger-rules.js';
import { type Database, sumOf, toNumber } from '../schema.js';
import { SPEND_COLUMNS, spendAt, spendCountersOf, spendStarts } from '../spend.js';
import type { LedgerCheckOptions, LedgerProblem, LedgerReport, LedgerShortfall } from '../types.js';
import type { SqlEngine } from './engine.js';

/**
 * Recomputes every account from the ledger (see `LedgerReads.ledgerCheck`), from one snapshot of the
 * database: credits = balance + open holds + charges, a balance never below zero, each request charged
 * once, the spend counters equal to the charges of today and this month, and each account's unbilled
 * service within the allowance.
 */
export async function ledgerCheck(
  engine: SqlEngine,
  options: LedgerCheckOptions = {},
): Promise<LedgerReport> {
  const allowanceNano = options.shortfallAllowanceNano ?? 0;
  if (!Number.isSafeInteger(allowanceNano) || allowanceNano < 0) {
    throw new Error('the shortfall allowance must be a whole number of nanodollars, 0 or more');
  }
  const now = engine.now();
  const { dayStart, monthStart } = spendStarts(now);
  return engine.snapshot().execute(async (trx) => {
    const accounts = await trx
      .selectFrom('accounts')
      .select(['id', 'email', 'balance_nano', ...SPEND_COLUMNS])
      .execute();
    const ledger = await trx
      .selectFrom('ledger')
      .select(['account_id', 'kind', (eb) => eb.fn.sum<string | number | null>('amount_nano').as('total')])
      .groupBy(['account_id', 'kind'])
      .execute();
    // Charges since migration 0007: the usage rows' charged_nano (null on rows written before it, which
    // sum ignores). In the same read of the table, the service not charged for: the rows' shortfalls.
    const usageCharges = await trx
      .selectFrom('usage')
      .select((eb) => [
        'account_id',
        eb.fn.sum<string | number | null>('charged_nano').as('total'),
        eb.fn.sum<string | number | null>('shortfall_nano').as('shortfall'),
        eb.fn
          .sum<string | number | null>(eb.case().when('shortfall_nano', '>', 0).then(1).else(0).end())
          .as('short_requests'),
      ])
      .groupBy('account_id')
      .execute();
    const holds = await trx
      .selectFrom('holds')
      .select(['account_id', (eb) => eb.fn.sum<string | number | null>('amount_nano').as('total')])
      .groupBy('account_id')
      .execute();
    // A request charged twice: two ledger rows (before 0007), or a ledger row and a charge on its usage row.
    const duplicates = await trx
      .selectFrom('ledger')
      .select(['account_id', 'request_id'])
      .where('kind', '=', 'charge')
      .where('request_id', 'is not', null)
      .groupBy(['account_id', 'request_id'])
      .having((eb) => eb.fn.countAll(), '>', 1)
      .execute();
    const chargedTwice = await trx
      .selectFrom('ledger')
      .innerJoin('usage', 'usage.request_id', 'ledger.request_id')
      .select('ledger.account_id')
      .where('ledger.kind', '=', 'charge')
      .where('usage.charged_nano', '>', 0)
      .execute();
    // Keys whose window was charged beyond their limit (never, as the holds count against it).
    const overLimit = await trx
      .selectFrom('api_keys')
      .select(['id', 'account_id', 'limit_nano', 'window_spent_nano'])
      .where('limit_nano', 'is not', null)
      .whereRef('window_spent_nano', '>', 'limit_nano')
      .execute();
    // The spend counters against the charges of the requests started today and this month.
    const spentSince = await chargesSinceByAccount(trx, [dayStart, monthStart]);

    const credits = new Map<string, number>();
    const charges = new Map<string, number>();
    for (const row of ledger)
      (row.kind === 'credit' ? credits : charges).set(row.account_id, sumOf(row.total));
    const shortOf = new Map<string, { requests: number; shortfallNano: number }>();
    for (const row of usageCharges) {
      charges.set(row.account_id, (charges.get(row.account_id) ?? 0) + sumOf(row.total));
      const shortfallNano = sumOf(row.shortfall);
      if (shortfallNano > 0)
        shortOf.set(row.account_id, { requests: sumOf(row.short_requests), shortfallNano });
    }
    const openHolds = new Map(holds.map((h) => [h.account_id, sumOf(h.total)]));
    const duplicated = new Set([...duplicates, ...chargedTwice].map((d) => d.account_id));

    const problems: LedgerProblem[] = [];
    const shortfalls: LedgerShortfall[] = [];
    for (const account of accounts) {
      const short = shortOf.get(account.id);
      if (short) shortfalls.push({ accountId: account.id, email: account.email, ...short });
      const figures = {
        accountId: account.id,
        email: account.email,
        creditsNano: credits.get(account.id) ?? 0,
        chargesNano: charges.get(account.id) ?? 0,
        openHoldsNano: openHolds.get(account.id) ?? 0,
        balanceNano: toNumber(account.balance_nano),
      };
      const discrepancyNano = discrepancy(figures);
      const [todayNano = 0, monthNano = 0] = spentSince.get(account.id) ?? [];
      const spent = { todayNano, monthNano };
      const counted = spendAt(spendCountersOf(account), now);
      const spendRight = spent.todayNano === counted.todayNano && spent.monthNano === counted.monthNano;
      const reason =
        figures.balanceNano < 0
          ? 'negative_balance'
          : discrepancyNano !== 0
            ? 'mismatch'
            : duplicated.has(account.id)
              ? 'duplicate_charge'
              : !spendRight
                ? 'spend_counters'
                : short && beyondAllowance(short.shortfallNano, allowanceNano)
                  ? 'shortfall'
                  : undefined;
      if (reason) {
        problems.push({
          ...figures,
          discrepancyNano,
          reason,
          ...(reason === 'spend_counters'
            ? {
                spend: { ...spent, countedTodayNano: counted.todayNano, countedMonthNano: counted.monthNano },
              }
            : {}),
          ...(reason === 'shortfall' && short ? { shortfall: short } : {}),
        });
      }
    }
    for (const key of overLimit) {
      const account = accounts.find((a) => a.id === key.account_id);
      if (!account) continue;
      problems.push({
        accountId: account.id,
        email: account.email,
        creditsNano: credits.get(account.id) ?? 0,
        chargesNano: charges.get(account.id) ?? 0,
        openHoldsNano: openHolds.get(account.id) ?? 0,
        balanceNano: toNumber(account.balance_nano),
        discrepancyNano: 0,
        reason: 'key_over_limit',
        key: {
          keyId: key.id,
          limitNano: toNumber(key.limit_nano ?? 0),
          spentNano: toNumber(key.window_spent_nano ?? 0),
        },
      });
    }
    // An account with another problem and a shortfall beyond the allowance too: the check fails for both.
    const overAllowance = shortfalls.some((s) => beyondAllowance(s.shortfallNano, allowanceNano));
    shortfalls.sort((a, b) => b.shortfallNano - a.shortfallNano || a.email.localeCompare(b.email));
    return {
      ok: problems.length === 0 && !overAllowance,
      accounts: accounts.length,
      problems,
      shortfalls,
      shortfallAllowanceNano: allowanceNano,
    };
  });
}

/**
 * The charges of the requests started at or after each time of `since` (one figure per time), per account
 * (of `accountId` only, when given): usage rows' charged_nano since migration 0007, and ledger rows of kind
 * charge before it. Summed by the database: the rows themselves never come over.
 */
export async function chargesSinceByAccount(
  db: Kysely<Database> | Transaction<Database>,
  since: readonly number[],
  accountId?: string,
): Promise<Map<string, number[]>> {
  const sums = (table: 'usage' | 'ledger', amount: 'charged_nano' | 'amount_nano') => {
    let query = db
      .selectFrom(table)
      .select([
        'account_id',
        ...since.map((t, i) =>
          sql<
            string | number | null
          >`sum(case when created_at >= ${t} then ${sql.ref(amount)} else 0 end)`.as(`s${i}`),
        ),
      ])
      .where('created_at', '>=', Math.min(...since))
      .groupBy('account_id');
    if (accountId !== undefined) query = query.where('account_id', '=', accountId);
    return query;
  };
  const rows: Record<string, unknown>[] = [
    ...(await sums('usage', 'charged_nano').where('charged_nano', '>', 0).execute()),
    ...(await sums('ledger', 'amount_nano').where('kind', '=', 'charge').execute()),
  ];
  const out = new Map<string, number[]>();
  for (const row of rows) {
    const account = row.account_id as string;
    const figures = out.get(account) ?? since.map(() => 0);
    for (let i = 0; i < since.length; i++) {
      figures[i] = (figures[i] as number) + sumOf(row[`s${i}`] as string | number | null);
    }
    out.set(account, figures);
  }
  return out;
}
