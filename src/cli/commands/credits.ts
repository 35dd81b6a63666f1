import { formatNano, MAX_NANO, nanoToUsd, parseUsdToNano } from '../../money/money.js';
import { usageError } from '../cli-error.js';
import { accountByEmail, cliAudit, normalizeEmail, withStore } from '../context.js';
import type { Output } from '../output.js';

/** A dollar amount as `parseUsdToNano` reads it, of any size. */
const PLAIN_DECIMAL = /^\d+(?:\.\d{1,9})?$/;

/** `tollgate credits add --email E --amount USD [--note TEXT]` — appends a credit to the ledger. */
export async function creditsAdd(
  args: { email: string | undefined; amount: string | undefined; note: string | undefined },
  out: Output,
): Promise<void> {
  const email = normalizeEmail(args.email);
  if (args.amount === undefined) throw usageError('--amount is required (USD, up to 9 decimal places)');
  const amountNano = parseUsdToNano(args.amount);
  if (amountNano === undefined && PLAIN_DECIMAL.test(args.amount.trim())) {
    // Well formed, so refused for its size alone.
    throw usageError(`--amount: "${args.amount}" is over the maximum, $${formatNano(MAX_NANO)}`);
  }
  if (amountNano === undefined || amountNano <= 0) {
    throw usageError(
      `--amount: "${args.amount}" must be a positive dollar amount with at most 9 decimal places`,
    );
  }
  await withStore(async (store) => {
    const account = await accountByEmail(store, email);
    const { balanceNano } = await store.addCredit({
      accountId: account.id,
      amountNano,
      note: args.note ?? null,
    });
    await cliAudit(store, {
      action: 'credit.grant',
      accountId: account.id,
      detail: { amount_nano: amountNano, note: args.note ?? null },
    });
    out.result(
      {
        account_id: account.id,
        email: account.email,
        amount: nanoToUsd(amountNano),
        balance: nanoToUsd(balanceNano),
      },
      `Added $${formatNano(amountNano)} to ${account.email}; balance is now $${formatNano(balanceNano)}.`,
    );
  });
}
