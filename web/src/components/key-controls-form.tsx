import { type FormEvent, useId, useState } from 'react';
import type { KeyControls, LimitReset, ModelPrice } from '../api';
import { ErrorNotice } from './notice';

/** What the controls form holds: text as typed, turned into a PATCH body by `controlsBody`. */
export interface ControlsDraft {
  limit: string;
  reset: LimitReset;
  /** `YYYY-MM-DDTHH:MM`, UTC; empty: never. */
  expires: string;
  restrict: boolean;
  allowed: string[];
  rpm: string;
  tpm: string;
}

export const NO_CONTROLS: ControlsDraft = {
  limit: '',
  reset: 'monthly',
  expires: '',
  restrict: false,
  allowed: [],
  rpm: '',
  tpm: '',
};

export function draftOf(c: KeyControls): ControlsDraft {
  return {
    limit: c.limit === null ? '' : String(c.limit.amount),
    reset: c.limit?.reset ?? 'monthly',
    expires: c.expires_at === null ? '' : c.expires_at.slice(0, 16),
    restrict: c.allowed !== null,
    allowed: c.allowed ?? [],
    rpm: c.rpm === null ? '' : String(c.rpm),
    tpm: c.tpm === null ? '' : String(c.tpm),
  };
}

const RESETS: { value: LimitReset; label: string }[] = [
  { value: 'daily', label: 'Daily' },
  { value: 'weekly', label: 'Weekly (Mondays)' },
  { value: 'monthly', label: 'Monthly (the 1st)' },
  { value: 'never', label: 'Never' },
];

type Body = Record<string, string | number | string[] | null>;

/** The PATCH body of a draft (every control, `null` clearing it), or the first problem, by field. */
export function controlsBody(d: ControlsDraft): { body: Body } | { field: string; message: string } {
  const body: Body = {};
  const limit = d.limit.trim();
  if (limit === '') body.limit = null;
  else if (!/^\d+(\.\d{1,9})?$/.test(limit) || Number(limit) <= 0) {
    return {
      field: 'limit',
      message: 'Enter the spend limit in dollars, e.g. 5 or 12.50, or leave it empty.',
    };
  } else body.limit = limit;
  body.limit_reset = d.reset;
  body.expires_at = d.expires === '' ? null : new Date(`${d.expires}:00Z`).toISOString();
  if (d.restrict && d.allowed.length === 0) {
    return { field: 'allowed', message: 'Choose at least one provider or model, or allow every one.' };
  }
  body.allowed = d.restrict ? d.allowed : null;
  for (const [name, text, what] of [
    ['rpm', d.rpm, 'Requests per minute'],
    ['tpm', d.tpm, 'Tokens per minute'],
  ] as const) {
    const t = text.trim();
    if (t === '') body[name] = null;
    else if (!/^\d+$/.test(t) || Number(t) < 1 || Number(t) > 2_147_483_647) {
      return { field: name, message: `${what}: a whole number of 1 or more, or leave it empty.` };
    } else body[name] = Number(t);
  }
  return { body };
}

/** The controls' fields, for the create form and the edit dialog. */
export function ControlsFields({
  draft,
  onChange,
  models,
  problem,
}: {
  draft: ControlsDraft;
  onChange: (d: ControlsDraft) => void;
  models: ModelPrice[] | undefined;
  problem: { field: string; message: string } | undefined;
}) {
  const id = useId();
  const set = (patch: Partial<ControlsDraft>) => onChange({ ...draft, ...patch });
  const invalid = (field: string) => (problem?.field === field ? true : undefined);
  const providers = (models ?? []).map((m) => m.provider);
  const modelNames = [...new Set((models ?? []).map((m) => m.model))];
  // Names on the key's list that this server does not know (any more) stay listed, never dropped.
  const others = draft.allowed.filter((n) => !providers.includes(n) && !modelNames.includes(n));
  const toggle = (name: string, on: boolean) =>
    set({ allowed: on ? [...draft.allowed, name] : draft.allowed.filter((n) => n !== name) });
  const box = (name: string, label: string) => (
    <label key={name} className="check">
      <input
        type="checkbox"
        checked={draft.allowed.includes(name)}
        onChange={(e) => toggle(name, e.target.checked)}
      />
      {label}
    </label>
  );
  return (
    <div className="controls-fields">
      <div className="row wrap">
        <div className="field">
          <label htmlFor={`${id}-limit`}>Spend limit (USD)</label>
          <input
            id={`${id}-limit`}
            inputMode="decimal"
            placeholder="No limit"
            aria-invalid={invalid('limit')}
            aria-describedby={`${id}-limit-hint`}
            value={draft.limit}
            onChange={(e) => set({ limit: e.target.value })}
          />
        </div>
        <div className="field">
          <label htmlFor={`${id}-reset`}>Limit resets</label>
          <select
            id={`${id}-reset`}
            value={draft.reset}
            onChange={(e) => set({ reset: e.target.value as LimitReset })}
          >
            {RESETS.map((r) => (
              <option key={r.value} value={r.value}>
                {r.label}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor={`${id}-expires`}>Expires (UTC)</label>
          <input
            id={`${id}-expires`}
            type="datetime-local"
            aria-describedby={`${id}-expires-hint`}
            value={draft.expires}
            onChange={(e) => set({ expires: e.target.value })}
          />
        </div>
      </div>
      <p id={`${id}-limit-hint`} className="hint">
        The most this key may spend per period (periods start at 00:00 UTC); empty: only the balance limits
        it. <span id={`${id}-expires-hint`}>Empty expiry: the key works until revoked.</span>
      </p>
      <div className="row wrap">
        <div className="field">
          <label htmlFor={`${id}-rpm`}>Requests per minute</label>
          <input
            id={`${id}-rpm`}
            inputMode="numeric"
            placeholder="No limit"
            aria-invalid={invalid('rpm')}
            value={draft.rpm}
            onChange={(e) => set({ rpm: e.target.value })}
          />
        </div>
        <div className="field">
          <label htmlFor={`${id}-tpm`}>Tokens per minute</label>
          <input
            id={`${id}-tpm`}
            inputMode="numeric"
            placeholder="No limit"
            aria-invalid={invalid('tpm')}
            value={draft.tpm}
            onChange={(e) => set({ tpm: e.target.value })}
          />
        </div>
      </div>
      <fieldset className="allow" aria-invalid={invalid('allowed')}>
        <legend>May use</legend>
        <label className="check">
          <input
            type="radio"
            name={`${id}-restrict`}
            checked={!draft.restrict}
            onChange={() => set({ restrict: false })}
          />
          Every provider and model
        </label>
        <label className="check">
          <input
            type="radio"
            name={`${id}-restrict`}
            checked={draft.restrict}
            onChange={() => set({ restrict: true })}
          />
          Only the ones chosen below (<code>auto</code> rotates over these only)
        </label>
        {draft.restrict && (
          <div className="allow-lists">
            {models === undefined ? (
              <p className="hint" aria-busy="true">
                Loading the providers…
              </p>
            ) : (
              <>
                <fieldset>
                  <legend>Providers</legend>
                  {providers.map((p) => box(p, p))}
                </fieldset>
                <fieldset>
                  <legend>Models</legend>
                  {modelNames.map((m) => box(m, m))}
                </fieldset>
                {others.length > 0 && (
                  <fieldset>
                    <legend>Not served here</legend>
                    {others.map((n) => box(n, n))}
                  </fieldset>
                )}
              </>
            )}
          </div>
        )}
      </fieldset>
      <ErrorNotice>{problem?.message}</ErrorNotice>
    </div>
  );
}

/** The edit dialog's form: the name and every control, saved in one PATCH. */
export function EditControlsForm({
  controls,
  models,
  onSave,
  onCancel,
}: {
  controls: KeyControls;
  models: ModelPrice[] | undefined;
  onSave: (body: Body) => Promise<string | undefined>;
  onCancel: () => void;
}) {
  const [name, setName] = useState(controls.name);
  const [draft, setDraft] = useState(() => draftOf(controls));
  const [problem, setProblem] = useState<{ field: string; message: string }>();
  const [busy, setBusy] = useState(false);
  const id = useId();

  async function submit(e: FormEvent) {
    e.preventDefault();
    if (name.trim() === '') {
      setProblem({ field: 'name', message: 'Give the key a name, e.g. where it is used.' });
      return;
    }
    const parsed = controlsBody(draft);
    if ('field' in parsed) {
      setProblem(parsed);
      return;
    }
    setBusy(true);
    setProblem(undefined);
    const error = await onSave({ name: name.trim(), ...parsed.body });
    setBusy(false);
    if (error) setProblem({ field: '', message: error });
  }

  return (
    <form onSubmit={submit} noValidate>
      <div className="field">
        <label htmlFor={`${id}-name`}>Name</label>
        <input
          id={`${id}-name`}
          maxLength={100}
          aria-invalid={problem?.field === 'name' ? true : undefined}
          value={name}
          onChange={(e) => setName(e.target.value)}
        />
      </div>
      <ControlsFields draft={draft} onChange={setDraft} models={models} problem={problem} />
      <div className="actions">
        <button type="button" className="button secondary" onClick={onCancel}>
          Cancel
        </button>
        <button type="submit" className="button primary" disabled={busy}>
          {busy ? 'Saving…' : 'Save changes'}
        </button>
      </div>
    </form>
  );
}
