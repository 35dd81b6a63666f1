import type { FastifyInstance } from 'fastify';
import { batchProblem, createTopUpBatch, parseExpiry } from '../auth/topup-code.js';
import { GatewayError } from '../errors.js';
import { nanoToUsd, parseUsdToNano } from '../money/money.js';
import type { CodeBatch, TopUpCodeState } from '../store/types.js';
import { fieldsOf, optionalString, queryOf } from './body.js';
import { csvLine } from './csv.js';
import { audit, type DashboardDeps, sessionOf } from './deps.js';
import { clientIp } from './request-info.js';

const ID = /^[A-Za-z0-9_]{1,64}$/;
const BATCHES_LISTED = 200;

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** A batch with its counts: created, redeemed, and expired (its unredeemed codes once it expired). */
export function codeBatchView(b: CodeBatch, now: number) {
  const expired = b.expiresAt !== null && b.expiresAt <= now ? b.codes - b.redeemed : 0;
  return {
    id: b.id,
    amount: nanoToUsd(b.amountNano),
    note: b.note,
    created: b.codes,
    redeemed: b.redeemed,
    expired,
    created_at: iso(b.createdAt),
    expires_at: b.expiresAt === null ? null : iso(b.expiresAt),
    created_by: b.createdBy,
  };
}

function codeStateView(c: TopUpCodeState) {
  return {
    position: c.position,
    hint: c.hint,
    redeemed_by: c.redeemedBy === null ? null : { id: c.redeemedBy.accountId, email: c.redeemedBy.email },
    redeemed_at: c.redeemedAt === null ? null : iso(c.redeemedAt),
  };
}

function batchNotFound(): GatewayError {
  return new GatewayError('not_found', 'No such code batch.');
}

/**
 * Top-up codes: admins create batches (the codes are answered once, as JSON or as a CSV download) and see
 * each batch's redemptions, never its codes; every account redeems a code for a credit.
 */
export async function codeRoutes(app: FastifyInstance, deps: DashboardDeps): Promise<void> {
  const { store, codes, config, now } = deps;
  const admin = { config: { access: 'admin' as const } };

  app.post('/credits/redeem', async (request) => {
    const session = sessionOf(request);
    const fields = fieldsOf(request.body, ['code']);
    const code = fields.code;
    if (typeof code !== 'string' || code.length > 200) {
      throw new GatewayError('invalid_request', '"code" is required.', { param: 'code' });
    }
    const redeemed = await codes.redeem({
      accountId: session.accountId,
      code,
      ip: clientIp(request, config),
    });
    request.log.info({ accountId: session.accountId, batchId: redeemed.batchId }, 'top-up code redeemed');
    return {
      object: 'credit',
      amount: nanoToUsd(redeemed.amountNano),
      balance: nanoToUsd(redeemed.balanceNano),
      batch_id: redeemed.batchId,
    };
  });

  app.get('/admin/code-batches', admin, async () => {
    const at = now();
    const batches = await store.listCodeBatches(BATCHES_LISTED);
    return { data: batches.map((b) => codeBatchView(b, at)) };
  });

  app.get<{ Params: { id: string } }>('/admin/code-batches/:id', admin, async (request) => {
    const { id } = request.params;
    const batch = ID.test(id) ? await store.getCodeBatch(id) : undefined;
    if (!batch) throw batchNotFound();
    const states = await store.listBatchCodes(id);
    return { batch: codeBatchView(batch, now()), codes: states.map(codeStateView) };
  });

  // `?format=csv` answers the new codes as a CSV download instead of JSON: either way, only this once.
  app.post('/admin/code-batches', admin, async (request, reply) => {
    const session = sessionOf(request);
    const q = queryOf(request.query, ['format']);
    if (q.format !== undefined && q.format !== 'csv' && q.format !== 'json') {
      throw new GatewayError('invalid_request', '"format" must be json or csv.', { param: 'format' });
    }
    const fields = fieldsOf(request.body, ['amount', 'count', 'expires_at', 'note']);
    const raw = fields.amount;
    const amountNano =
      typeof raw === 'string' || typeof raw === 'number' ? parseUsdToNano(String(raw)) : undefined;
    const count = typeof fields.count === 'number' ? fields.count : Number.NaN;
    const expiresText = optionalString(fields, 'expires_at', 40);
    const expiresAt = expiresText === undefined ? null : (parseExpiry(expiresText) ?? Number.NaN);
    const note = optionalString(fields, 'note', 200)?.trim() || null;
    const problem = batchProblem({ amountNano, count, expiresAt, now: now() });
    if (problem || amountNano === undefined) {
      const param = problem?.param === 'expires' ? 'expires_at' : (problem?.param ?? 'amount');
      throw new GatewayError('invalid_request', `"${param}": ${problem?.message ?? 'invalid'}.`, { param });
    }
    const created = await createTopUpBatch(store, {
      amountNano,
      count,
      expiresAt,
      note,
      createdBy: session.accountId,
    });
    request.log.info(
      { adminId: session.accountId, batchId: created.batch.id, codes: count, amountNano },
      'top-up code batch created',
    );
    await audit(deps, request, {
      action: 'code_batch.create',
      targetId: created.batch.id,
      detail: { count, amount_nano: amountNano, expires_at: expiresAt, note },
    });
    if (q.format === 'csv') {
      const amount = nanoToUsd(amountNano);
      const lines = [csvLine(['code', 'amount_usd', 'batch_id', 'expires_at'])];
      for (const code of created.codes) {
        lines.push(csvLine([code, amount, created.batch.id, expiresAt === null ? null : iso(expiresAt)]));
      }
      return reply
        .code(201)
        .type('text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="tollgate-codes-${created.batch.id}.csv"`)
        .send(lines.join(''));
    }
    // Like an API key, the codes are shown once: only their hashes are stored.
    return reply.code(201).send({ batch: codeBatchView(created.batch, now()), codes: created.codes });
  });
}
