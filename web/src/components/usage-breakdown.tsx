import { api, query, type UsageReport } from '../api';
import { keyLabel } from '../format';
import { Link } from '../router';
import { useLoad } from '../use-load';
import { LoadError } from './notice';
import { Breakdown, RefusedList, ReportCards, ReportChart, ReportControls, useReportParams } from './report';

/**
 * The account's totals over a range it chooses, per day or hour, in UTC or the browser's zone (kept in the
 * URL, so a link or a reload shows the same): spend, calls and tokens, a chart, and breakdowns by model,
 * provider and key, refused calls by reason.
 */
export function UsageBreakdown() {
  const params = useReportParams(['key_id', 'provider', 'model']);
  const q = query(params);
  const report = useLoad(() => api<UsageReport>('GET', `/usage/report${q}`), q);
  const r = report.data;
  return (
    <section className="panel" aria-labelledby="totals-heading">
      <h2 id="totals-heading">Totals</h2>
      <ReportControls path="/usage" report={r} />
      <LoadError loaded={report} what="the totals" />
      <div aria-busy={report.loading}>
        {r && (
          <>
            <p className="hint" data-testid="report-scope">
              {r.from} to {r.to}, per {r.interval}, times in {r.time_zone}
            </p>
            <ReportCards report={r} />
            <ReportChart report={r} />
            <Breakdown
              title="By model"
              column="Model"
              rows={r.by_model.map((m) => ({ ...m, key: m.model, label: m.model }))}
            />
            <Breakdown
              title="By provider"
              column="Provider"
              rows={r.by_provider.map((p) => ({ ...p, key: p.provider, label: p.provider }))}
            />
            <Breakdown
              title="By key"
              column="Key"
              rows={r.by_key.map((k) => ({
                ...k,
                key: k.key_id,
                label: `${keyLabel({ id: k.key_id, name: k.name ?? null, hint: k.hint ?? null })}${k.revoked ? ' (revoked)' : ''}`,
              }))}
            />
            <RefusedList report={r} />
          </>
        )}
      </div>
    </section>
  );
}

/** The usage page's two views: its requests (with the per-day chart) and its totals. */
export function UsageViews({ view }: { view: 'requests' | 'totals' }) {
  return (
    <nav className="pager" aria-label="Usage views">
      <Link
        to="/usage"
        className="button secondary small"
        aria-current={view === 'requests' ? 'page' : undefined}
      >
        Requests
      </Link>
      <Link
        to="/usage?view=totals"
        className="button secondary small"
        aria-current={view === 'totals' ? 'page' : undefined}
      >
        Totals by model, provider and key
      </Link>
    </nav>
  );
}
