import type { TestDatabase } from '../helpers/test-database.js';

/**
 * Writes `rows` served requests of one account and key straight into `usage` with one statement (a
 * recursive CTE on SQLite, generate_series on PostgreSQL), spread evenly over [from, to): a large account
 * in seconds, for the tests of the dashboard's reports. Each costs 150 nanodollars, all charged.
 */
export async function bulkUsage(
  db: TestDatabase,
  input: { accountId: string; keyId: string; rows: number; from: number; to: number; prefix: string },
): Promise<void> {
  const columns = `request_id, account_id, key_id, provider, model, prompt_tokens, completion_tokens,
    usage_estimated, input_cost_nano, output_cost_nano, shortfall_nano, status, error_code, http_status,
    duration_ms, client_gone, created_at, charged_nano`;
  const step = Math.max(1, Math.floor((input.to - input.from) / input.rows));
  const values = `? || x, ?, ?, 'prov-qwen', 'qwen-plus', 10, 5, 0, 100, 50, 0, 'ok', null, 200, 1, 0,
    ? + x * ?, 150`;
  const params = [input.prefix, input.accountId, input.keyId, input.from, step];
  if (db.dialect === 'sqlite') {
    await db.query(
      `insert into usage (${columns})
       with recursive c(x) as (select 0 union all select x + 1 from c where x < ?)
       select ${values} from c`,
      [input.rows - 1, ...params],
    );
  } else {
    await db.query(
      `insert into usage (${columns})
       select ${values.replace('? || x', '?::text || x').replace('? + x * ?', '?::bigint + x * ?::bigint')}
         from generate_series(0, ?::bigint) as x`,
      [...params, input.rows - 1],
    );
  }
}
