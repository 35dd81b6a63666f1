import type { FastifyInstance } from 'fastify';
import type { CodeRedemption } from '../auth/code-redemption.js';
import { GatewayError } from '../errors.js';
import { nanoToUsd } from '../money/money.js';

/** The redemption's body and answer, as `/api/v1/openapi.json` documents them. */
export const redeemRequestSchema: Record<string, unknown> = {
  type: 'object',
  required: ['code'],
  properties: { code: { type: 'string', maxLength: 200, description: 'A top-up code, `tg-…`.' } },
};
export const creditSchema: Record<string, unknown> = {
  type: 'object',
  required: ['object', 'amount', 'balance', 'batch_id'],
  properties: {
    object: { const: 'credit' },
    amount: { type: 'number', description: 'US dollars credited.' },
    balance: { type: 'number', description: 'The balance after the credit, US dollars.' },
    batch_id: { type: 'string', description: 'The batch the code belongs to.' },
  },
};
/** The error codes the redemption answers with (docs/errors.md). */
export const REDEEM_ERRORS = [
  'missing_api_key',
  'invalid_api_key',
  'invalid_request',
  'invalid_json',
  'invalid_code',
  'request_too_large',
  'unsupported_media_type',
  'rate_limit_exceeded',
  'too_many_attempts',
  'internal_error',
  'service_unavailable',
] as const;

/**
 * `POST /api/v1/credits/redeem {"code": "tg-…"}`: redeems a top-up code for the key's account
 * (docs/api.md "Top-up codes"). Registered inside the `/api/v1` plugin, behind its authentication.
 */
export function redeemRoute(app: FastifyInstance, codes: CodeRedemption): void {
  app.post('/credits/redeem', async (request) => {
    const auth = request.auth;
    if (!auth) throw new Error('route reached without authentication');
    const body = request.body;
    const code =
      typeof body === 'object' && body !== null && !Array.isArray(body)
        ? (body as Record<string, unknown>).code
        : undefined;
    if (typeof code !== 'string' || code.length > 200) {
      throw new GatewayError('invalid_request', '"code" must be a string: the top-up code to redeem.', {
        param: 'code',
      });
    }
    const redeemed = await codes.redeem({ accountId: auth.accountId, code });
    request.log.info({ accountId: auth.accountId, batchId: redeemed.batchId }, 'top-up code redeemed');
    return {
      object: 'credit',
      amount: nanoToUsd(redeemed.amountNano),
      balance: nanoToUsd(redeemed.balanceNano),
      batch_id: redeemed.batchId,
    };
  });
}
