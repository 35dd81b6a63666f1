import { formatNano, nanoToUsd, parseUsdToNano } from '../../money/money.js';
import { usageError } from '../cli-error.js';
import { accountByEmail, withStore } from '../context.js';
import type { Output } from '../output.js';

/** `tollgate credits add --email E --amount USD [--note TEXT]` — appends a credit to the ledger. */
export async function creditsAdd(
  args: { email: string | undefined; amount: string | undefined; note: string | undefined },
  out: Output,
): Promise<void> {
  if (args.amount === undefined) throw usageError('--amount is required (USD, up to 9 decimal places)');
  const amountNano = parseUsdToNano(args.amount);
  if (amountNano === undefined || amountNano <= 0) {
    throw usageError(
      `--amount: "${args.amount}" must be a positive dollar amount with at most 9 decimal places`,
    );
  }
  await withStore(async (store) => {
    const account = await accountByEmail(store, args.email);
    const { balanceNano } = await store.addCredit({
      accountId: account.id,
      amountNano,
      note: args.note ?? null,
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
