import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { PLAYGROUND_KEY_ID } from '../auth/keys.js';
import { GatewayError } from '../errors.js';
import { nanoToUsd } from '../money/money.js';
import type { DailyUsageRow, UsageFilters } from '../store/dashboard-types.js';
import { queryOf } from './body.js';
import { csvLine, USAGE_CSV_HEADER, usageCsvLine } from './csv.js';
import { type DashboardDeps, sessionOf } from './deps.js';
import { decodeCursor, encodeCursor, usageFilters } from './usage-query.js';
import { reportScope, rollUp } from './usage-report.js';
import { usageView } from './views.js';

const DAY_MS = 86_400_000;
const EXPORT_BATCH = 1000;
const FILTERS = ['key_id', 'provider', 'status', 'from', 'to'] as const;

function intParam(value: string | undefined, name: string, min: number, max: number, fallback: number) {
  if (value === undefined) return fallback;
  const n = /^\d{1,6}$/.test(value) ? Number(value) : Number.NaN;
  if (!(n >= min && n <= max)) {
    throw new GatewayError('invalid_request', `"${name}" must be a whole number from ${min} to ${max}.`, {
      param: name,
    });
  }
  return n;
}

interface DayTotals {
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  cost: number;
}

function totals(rows: DailyUsageRow[]): DayTotals {
  let costNano = 0;
  const t = { requests: 0, prompt_tokens: 0, completion_tokens: 0, cost: 0 };
  for (const r of rows) {
    t.requests += r.requests;
    t.prompt_tokens += r.promptTokens;
    t.completion_tokens += r.completionTokens;
    costNano += r.costNano;
  }
  t.cost = nanoToUsd(costNano);
  return t;
}

/** The account's requests: a filtered, paged list; per-day totals by provider; a CSV export. */
export async function usageRoutes(app: FastifyInstance, deps: DashboardDeps): Promise<void> {
  const { dashboardStore, now } = deps;

  app.get('/usage', async (request) => {
    const session = sessionOf(request);
    const q = queryOf(request.query, [...FILTERS, 'limit', 'cursor']);
    const filters = usageFilters(q);
    const limit = intParam(q.limit, 'limit', 1, 200, 50);
    const cursor = q.cursor === undefined ? undefined : decodeCursor(q.cursor);
    // One row more than the page tells whether another page follows.
    const rows = await dashboardStore.usagePage(session.accountId, filters, { limit: limit + 1, cursor });
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      data: page.map(usageView),
      next_cursor:
        rows.length > limit && last
          ? encodeCursor({ createdAt: last.createdAt, requestId: last.requestId })
          : null,
    };
  });

  app.get('/usage/daily', async (request) => {
    const session = sessionOf(request);
    const q = queryOf(request.query, ['days', 'key_id']);
    const days = intParam(q.days, 'days', 1, 90, 30);
    const keyId = usageFilters({ key_id: q.key_id }).keyId;
    const today = Math.floor(now() / DAY_MS);
    const first = today - days + 1;
    const range = { from: first * DAY_MS, to: (today + 1) * DAY_MS };
    const rows = await dashboardStore.usageDaily(session.accountId, range, keyId);
    // Refused requests (402 before any hold) reached no provider: counted per day, beside the totals.
    const refused = new Map(
      (await dashboardStore.refusalsDaily(session.accountId, range, keyId)).map((r) => [r.day, r.requests]),
    );
    const providers = [...new Set(rows.map((r) => r.provider ?? 'none'))].sort();
    const out = [];
    for (let day = first; day <= today; day++) {
      const ofDay = rows.filter((r) => r.day === day);
      const byProvider: Record<string, DayTotals> = {};
      for (const p of providers) {
        const ofProvider = ofDay.filter((r) => (r.provider ?? 'none') === p);
        if (ofProvider.length > 0) byProvider[p] = totals(ofProvider);
      }
      // `requests` counts the refused ones too, as when each had a usage row; `by_provider` cannot.
      const dayTotals = totals(ofDay);
      const refusedOfDay = refused.get(day) ?? 0;
      out.push({
        date: new Date(day * DAY_MS).toISOString().slice(0, 10),
        ...dayTotals,
        requests: dayTotals.requests + refusedOfDay,
        refused: refusedOfDay,
        by_provider: byProvider,
      });
    }
    return { days: out, providers };
  });

  app.get('/usage/report', async (request) => {
    const session = sessionOf(request);
    const q = queryOf(request.query, ['from', 'to', 'interval', 'tz', 'key_id', 'provider', 'model']);
    const scope = reportScope(q, now());
    scope.query.accountId = session.accountId;
    const [rows, refusals, keys] = await Promise.all([
      dashboardStore.usageTotals(scope.query),
      dashboardStore.refusalTotals(scope.query),
      dashboardStore.listKeysWithSpend(session.accountId),
    ]);
    const { by_account: _accounts, ...report } = rollUp(scope, rows, refusals);
    const names = new Map(
      keys.map((k) => [k.id, { name: k.name, hint: k.hint, revoked: k.revokedAt !== null }]),
    );
    return {
      ...report,
      by_key: report.by_key.map((entry) => {
        const key = names.get(entry.key_id);
        return entry.key_id === PLAYGROUND_KEY_ID
          ? { ...entry, name: 'Playground', hint: null, revoked: false }
          : { ...entry, name: key?.name ?? null, hint: key?.hint ?? null, revoked: key?.revoked ?? false };
      }),
    };
  });

  app.get('/usage/export.csv', async (request, reply) => {
    const session = sessionOf(request);
    const filters: UsageFilters = usageFilters(queryOf(request.query, FILTERS));
    const accountId = session.accountId;
    // Streamed in keyset pages: an export never holds more than one batch in memory.
    async function* lines(): AsyncGenerator<string> {
      yield csvLine(USAGE_CSV_HEADER);
      let cursor: { createdAt: number; requestId: string } | undefined;
      for (;;) {
        const rows = await dashboardStore.usagePage(accountId, filters, { limit: EXPORT_BATCH, cursor });
        for (const row of rows) yield usageCsvLine(row);
        const last = rows[rows.length - 1];
        if (!last || rows.length < EXPORT_BATCH) return;
        cursor = { createdAt: last.createdAt, requestId: last.requestId };
      }
    }
    const date = new Date(now()).toISOString().slice(0, 10);
    return reply
      .type('text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="tollgate-usage-${date}.csv"`)
      .send(Readable.from(lines()));
  });
}
