import { redeemTopUpCode } from '../../auth/code-redemption.js';
import { batchProblem, createTopUpBatch, parseExpiry } from '../../auth/topup-code.js';
import { isGatewayError } from '../../errors.js';
import { formatNano, nanoToUsd, parseUsdToNano } from '../../money/money.js';
import type { CodeBatch } from '../../store/types.js';
import type { OptionValues } from '../args.js';
import { CliError, usageError } from '../cli-error.js';
import { accountByEmail, cliAudit, normalizeEmail, withStore } from '../context.js';
import { isoOrNull, type Output } from '../output.js';

/** Batches `codes list` shows, newest first. */
const LISTED = 1_000;

/** A batch as the CLI prints it: what it credits, and its codes created, redeemed and expired. */
function batchJson(b: CodeBatch, now: number) {
  return {
    id: b.id,
    amount: nanoToUsd(b.amountNano),
    note: b.note,
    created: b.codes,
    redeemed: b.redeemed,
    expired: b.expiresAt !== null && b.expiresAt <= now ? b.codes - b.redeemed : 0,
    created_at: isoOrNull(b.createdAt),
    expires_at: isoOrNull(b.expiresAt),
  };
}

/** `tollgate codes create|list|redeem` (docs/api.md "Top-up codes"). */
export async function codes(command: string, values: OptionValues, out: Output): Promise<void> {
  if (command === 'codes create') return create(values, out);
  if (command === 'codes list') return list(out);
  return redeem(values, out);
}

/** `codes create --amount USD --count N [--expires ISO-8601] [--note TEXT]` — prints the codes once. */
async function create(values: OptionValues, out: Output): Promise<void> {
  if (values.amount === undefined) throw usageError('--amount is required (USD, up to 9 decimal places)');
  if (values.count === undefined) throw usageError('--count is required: how many codes to make');
  const amountNano = parseUsdToNano(values.amount);
  const count = /^\d{1,6}$/.test(values.count) ? Number(values.count) : Number.NaN;
  const expiresAt = values.expires === undefined ? null : (parseExpiry(values.expires) ?? Number.NaN);
  const note = values.note?.trim() || null;
  const problem = batchProblem({ amountNano, count, expiresAt, now: Date.now() });
  if (problem || amountNano === undefined) {
    const option = problem?.param ?? 'amount';
    throw usageError(`--${option}: "${values[option] ?? ''}": ${problem?.message ?? 'invalid'}`);
  }
  await withStore(async (store) => {
    const created = await createTopUpBatch(store, { amountNano, count, expiresAt, note, createdBy: null });
    await cliAudit(store, {
      action: 'code_batch.create',
      targetId: created.batch.id,
      detail: { count, amount_nano: amountNano, expires_at: expiresAt, note },
    });
    out.result(
      { batch: batchJson(created.batch, Date.now()), codes: created.codes },
      `${created.codes.join('\n')}\n\n${count} code${count === 1 ? '' : 's'} of $${formatNano(amountNano)} ` +
        `in batch ${created.batch.id}.\nThis is the only time the codes are shown: store them now.`,
    );
  });
}

/** `codes list` — batches with their redeemed and expired counts. */
async function list(out: Output): Promise<void> {
  await withStore(async (store) => {
    const now = Date.now();
    const batches = (await store.listCodeBatches(LISTED)).map((b) => batchJson(b, now));
    const human =
      batches.length === 0
        ? 'No code batches.'
        : batches
            .map(
              (b) =>
                `${b.id}  $${b.amount}  ${b.redeemed}/${b.created} redeemed` +
                `${b.expired > 0 ? `, ${b.expired} expired` : ''}` +
                `${b.expires_at ? `  expires ${b.expires_at}` : ''}${b.note ? `  ${b.note}` : ''}`,
            )
            .join('\n');
    out.result({ batches }, human);
  });
}

/** `codes redeem --email E --code C` — credits the code's amount to the account. */
async function redeem(values: OptionValues, out: Output): Promise<void> {
  const email = normalizeEmail(values.email);
  if (values.code === undefined) throw usageError('--code is required');
  const code = values.code;
  await withStore(async (store) => {
    const account = await accountByEmail(store, email);
    let redeemed: Awaited<ReturnType<typeof redeemTopUpCode>>;
    try {
      redeemed = await redeemTopUpCode(store, account.id, code);
    } catch (err) {
      if (isGatewayError(err)) throw new CliError(err.message, 1, err.code);
      throw err;
    }
    out.result(
      {
        object: 'credit',
        account_id: account.id,
        email: account.email,
        amount: nanoToUsd(redeemed.amountNano),
        balance: nanoToUsd(redeemed.balanceNano),
        batch_id: redeemed.batchId,
      },
      `Redeemed $${formatNano(redeemed.amountNano)} for ${account.email} (batch ${redeemed.batchId}); ` +
        `balance is now $${formatNano(redeemed.balanceNano)}.`,
    );
  });
}
