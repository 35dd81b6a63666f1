import { useState } from 'react';
import { type AuditEntry, api, query } from '../api';
import { LoadError } from '../components/notice';
import { dateTime } from '../format';
import { useLoad } from '../use-load';

interface AuditPage {
  data: AuditEntry[];
  next_cursor: string | null;
}

const ACTIONS: Record<string, string> = {
  'credit.grant': 'Granted credit',
  'account.disable': 'Disabled an account',
  'account.enable': 'Enabled an account',
  'invite.create': 'Created an invite',
  'invite.revoke': 'Withdrew an invite',
  'code_batch.create': 'Created a code batch',
  'key.create': 'Created a key',
  'key.update': 'Changed a key',
  'key.revoke': 'Revoked a key',
};

/** An entry's figures as `name: value` pairs; amounts in nanodollars shown in dollars. */
function details(detail: Record<string, unknown> | null): string {
  if (!detail) return '';
  return Object.entries(detail)
    .filter(([, v]) => v !== null && v !== undefined)
    .map(([k, v]) =>
      k === 'amount_nano' && typeof v === 'number'
        ? `amount: $${(v / 1e9).toLocaleString('en-US', { minimumFractionDigits: 6, maximumFractionDigits: 9 })}`
        : `${k.replace(/_/g, ' ')}: ${typeof v === 'string' ? v : JSON.stringify(v)}`,
    )
    .join(' · ');
}

/** Who did what and when: the administrators' actions, from the dashboard and the command line. */
export function AdminAuditPage() {
  const [before, setBefore] = useState<string>();
  const page = useLoad(
    () => api<AuditPage>('GET', `/admin/audit${query({ limit: 50, before })}`),
    before ?? '',
  );
  const data = page.data;
  return (
    <>
      <p className="lead">
        Every credit grant, account disabled or enabled, invite, code batch and change to another account’s
        keys, with who did it (an administrator’s email, or <code>cli</code> for the command line) and when
        (UTC).
      </p>
      <LoadError loaded={page} what="the audit log" />
      <div aria-busy={page.loading}>
        {data && data.data.length === 0 && <p className="hint">No administrator actions yet.</p>}
        {data && data.data.length > 0 && (
          // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must take focus (WCAG 2.1.1).
          <div className="table-wrap" tabIndex={0}>
            <table>
              <thead>
                <tr>
                  <th scope="col">When</th>
                  <th scope="col">Who</th>
                  <th scope="col">What</th>
                  <th scope="col">Account</th>
                  <th scope="col">Details</th>
                </tr>
              </thead>
              <tbody>
                {data.data.map((e) => (
                  <tr key={e.id}>
                    <td className="nowrap" data-label="When">
                      {dateTime(e.at)}
                    </td>
                    <td data-label="Who">{e.actor}</td>
                    <td data-label="What">
                      {ACTIONS[e.action] ?? e.action}
                      {e.target_id && <code className="key-hint">{e.target_id}</code>}
                    </td>
                    <td data-label="Account">{e.account_id ?? '—'}</td>
                    <td data-label="Details">{details(e.detail)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <div className="pager">
          {before && (
            <button type="button" className="button secondary" onClick={() => setBefore(undefined)}>
              Newest
            </button>
          )}
          {data?.next_cursor && (
            <button
              type="button"
              className="button secondary"
              onClick={() => setBefore(data.next_cursor ?? undefined)}
            >
              Older
            </button>
          )}
        </div>
      </div>
    </>
  );
}
