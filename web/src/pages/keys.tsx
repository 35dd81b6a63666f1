import { type FormEvent, type ReactNode, useEffect, useRef, useState } from 'react';
import { announce, focusOn } from '../announce';
import { type ApiKey, api, type KeyControls, type KeyList, type ModelPrice, type ModelPrices } from '../api';
import { CopyButton } from '../components/copy-button';
import { Dialog } from '../components/dialog';
import { GettingStarted } from '../components/getting-started';
import {
  type ControlsDraft,
  ControlsFields,
  controlsBody,
  EditControlsForm,
  NO_CONTROLS,
} from '../components/key-controls-form';
import { ErrorNotice, LoadError, SuccessNotice } from '../components/notice';
import { dateTime, tokens, usd } from '../format';
import { useSession } from '../session';
import { messageOf, useLoad } from '../use-load';

type Created = ApiKey & { key: string };

/** The key just created, shown once, with the snippets filled in. */
function NewKey({ created, onDone }: { created: Created; onDone: () => void }) {
  const { apiBaseUrl } = useSession();
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    // The form that had the focus is gone: the focus goes to the new key, which is read next.
    focusOn(heading.current);
  }, []);
  return (
    <section className="panel new-key" aria-labelledby="new-key-heading">
      <h2 id="new-key-heading" ref={heading} tabIndex={-1}>
        Your new key “{created.name}”
      </h2>
      <p className="warning" role="alert">
        <strong>Copy this key now. You will not see it again:</strong> Tollgate stores only a fingerprint of
        it. If you lose it, revoke it and create another.
      </p>
      <div className="secret">
        <code data-testid="new-key">{created.key}</code>
        <CopyButton text={created.key} label="Copy key" />
      </div>
      <h3>Try it</h3>
      <GettingStarted baseUrl={apiBaseUrl} apiKey={created.key} />
      <button type="button" className="button primary" onClick={onDone}>
        I have copied the key
      </button>
    </section>
  );
}

/** What a key's controls say, in a few words each: its limit and window, expiry, rate limits, list. */
function ControlsSummary({ c }: { c: KeyControls | undefined }) {
  if (!c) return null;
  const parts: ReactNode[] = [];
  if (c.limit) {
    parts.push(
      <li key="limit" data-testid="key-limit">
        {usd(c.limit.spent)} of {usd(c.limit.amount)} spent {PERIOD[c.limit.reset]}
        {c.limit.resets_at && <>, resets {dateTime(c.limit.resets_at)}</>}
      </li>,
    );
  }
  if (c.expires_at) {
    const past = Date.parse(c.expires_at) <= Date.now();
    parts.push(
      <li key="expires">
        {past ? 'Expired' : 'Expires'} {dateTime(c.expires_at)}
      </li>,
    );
  }
  if (c.rpm !== null || c.tpm !== null) {
    const rates = [
      c.rpm !== null ? `${tokens(c.rpm)} requests` : undefined,
      c.tpm !== null ? `${tokens(c.tpm)} tokens` : undefined,
    ].filter(Boolean);
    parts.push(<li key="rate">{rates.join(', ')} per minute</li>);
  }
  if (c.allowed) parts.push(<li key="allowed">Only {c.allowed.join(', ')}</li>);
  if (parts.length === 0) return <span className="hint">No limits</span>;
  return <ul className="controls-summary">{parts}</ul>;
}

const PERIOD = {
  daily: 'today',
  weekly: 'this week',
  monthly: 'this month',
  never: 'in all (never resets)',
} as const;

function CreateKeyForm({
  list,
  models,
  onCreated,
}: {
  list: KeyList;
  models: ModelPrice[] | undefined;
  onCreated: (c: Created, controlsError: string | undefined) => void;
}) {
  const [name, setName] = useState('');
  const [draft, setDraft] = useState<ControlsDraft>(NO_CONTROLS);
  const [problem, setProblem] = useState<{ field: string; message: string }>();
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const full = list.active >= list.limit;

  async function submit(e: FormEvent) {
    e.preventDefault();
    if (name.trim() === '') {
      setError('Give the key a name, e.g. where it is used.');
      return;
    }
    const withControls = draft !== NO_CONTROLS;
    const parsed = controlsBody(draft);
    if ('field' in parsed) {
      setProblem(parsed);
      return;
    }
    setBusy(true);
    setError(undefined);
    setProblem(undefined);
    try {
      const created = await api<Created>('POST', '/keys', { name: name.trim() });
      // The secret is shown only after its controls are set: nobody can use the key before.
      let controlsError: string | undefined;
      if (withControls) {
        try {
          await api('PATCH', `/keys/${encodeURIComponent(created.id)}`, parsed.body);
        } catch (err) {
          controlsError = messageOf(err);
        }
      }
      setName('');
      setDraft(NO_CONTROLS);
      onCreated(created, controlsError);
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  }

  return (
    <form className="inline-form" onSubmit={submit} aria-labelledby="create-key-heading" noValidate>
      <h2 id="create-key-heading">Create a key</h2>
      {full && (
        <output className="notice info">
          You have {list.active} active keys, the most an account may have. Revoke one to create another.
        </output>
      )}
      <div className="row">
        <div className="field grow">
          <label htmlFor="key-name">Name</label>
          <input
            id="key-name"
            required
            maxLength={100}
            placeholder="e.g. laptop, billing-service, CI"
            aria-describedby="key-name-hint"
            value={name}
            disabled={full}
            onChange={(e) => {
              setName(e.target.value);
              setError(undefined);
            }}
          />
        </div>
        <button type="submit" className="button primary" disabled={busy || full || name.trim() === ''}>
          {busy ? 'Creating…' : 'Create key'}
        </button>
      </div>
      <p id="key-name-hint" className="hint">
        A name that says where the key is used, so you know which one to revoke.
      </p>
      <details className="key-controls" open={problem !== undefined || undefined}>
        <summary>Limits and restrictions (optional)</summary>
        <ControlsFields draft={draft} onChange={setDraft} models={models} problem={problem} />
      </details>
      <ErrorNotice>{error}</ErrorNotice>
    </form>
  );
}

export function KeysPage() {
  const keys = useLoad(() => api<KeyList>('GET', '/keys'), 'keys');
  const controls = useLoad(() => api<{ data: KeyControls[] }>('GET', '/keys/controls'), 'key-controls');
  const models = useLoad(() => api<ModelPrices>('GET', '/models'), 'models');
  const [created, setCreated] = useState<Created>();
  const [controlsError, setControlsError] = useState<string>();
  const [editing, setEditing] = useState<KeyControls>();
  const [saved, setSaved] = useState<string>();
  const [revoking, setRevoking] = useState<ApiKey>();
  const [revokeError, setRevokeError] = useState<string>();
  const [revoked, setRevoked] = useState<string>();
  const [busy, setBusy] = useState(false);
  const keysHeading = useRef<HTMLHeadingElement>(null);
  const revokedNotice = useRef<HTMLDivElement>(null);
  // Where the focus goes once what had it is gone: set by an action, applied after the next render.
  const [focusNext, setFocusNext] = useState<'keys' | 'revoked'>();
  useEffect(() => {
    if (focusNext === 'keys' && keysHeading.current) {
      focusOn(keysHeading.current);
      setFocusNext(undefined);
    } else if (focusNext === 'revoked' && revokedNotice.current) {
      focusOn(revokedNotice.current);
      setFocusNext(undefined);
    }
  });

  async function revoke() {
    if (!revoking) return;
    setBusy(true);
    setRevokeError(undefined);
    try {
      await api('DELETE', `/keys/${encodeURIComponent(revoking.id)}`);
      const message = `Key “${revoking.name}” was revoked. Requests with it are refused from now on.`;
      setRevoked(message);
      setSaved(undefined);
      setRevoking(undefined);
      setFocusNext('revoked');
      keys.reload();
      controls.reload();
    } catch (err) {
      setRevokeError(messageOf(err));
    } finally {
      setBusy(false);
    }
  }

  async function save(body: Record<string, unknown>): Promise<string | undefined> {
    if (!editing) return undefined;
    try {
      const next = await api<KeyControls>('PATCH', `/keys/${encodeURIComponent(editing.id)}`, body);
      setEditing(undefined);
      setRevoked(undefined);
      setSaved(`Key “${next.name}” saved.`);
      setFocusNext('revoked');
      keys.reload();
      controls.reload();
      return undefined;
    } catch (err) {
      return messageOf(err);
    }
  }

  const list = keys.data;
  const controlsOf = (id: string) => controls.data?.data.find((c) => c.id === id);
  return (
    <>
      <p className="lead">
        Keys authenticate calls to the API (<code>Authorization: Bearer sk-svc-…</code>). Each has full access
        to your balance: keep keys out of public places and client-side code.
        {list && (
          <>
            {' '}
            <strong>
              {list.active} of {list.limit}
            </strong>{' '}
            active.
          </>
        )}
      </p>
      <LoadError loaded={keys} what="your keys" />
      <LoadError loaded={controls} what="your keys' limits" />
      {created && (
        <ErrorNotice>
          {controlsError &&
            `The key was created, but its limits were not saved: ${controlsError} Set them with Edit before you use the key.`}
        </ErrorNotice>
      )}
      {created && (
        <NewKey
          created={created}
          onDone={() => {
            setCreated(undefined);
            setFocusNext('keys');
          }}
        />
      )}
      {list && !created && (
        <CreateKeyForm
          list={list}
          models={models.data?.data}
          onCreated={(c, error) => {
            setRevoked(undefined);
            setSaved(undefined);
            setControlsError(error);
            setCreated(c);
            announce(`Key “${c.name}” created. Copy it now: it is shown only this once.`);
            keys.reload();
            controls.reload();
          }}
        />
      )}
      <div ref={revokedNotice} tabIndex={-1}>
        <SuccessNotice>{revoked ?? saved}</SuccessNotice>
      </div>
      {list && (
        <section className="panel" aria-labelledby="keys-heading">
          <h2 id="keys-heading" ref={keysHeading} tabIndex={-1}>
            Your keys
          </h2>
          {list.data.length === 0 ? (
            <p className="hint">No keys yet.</p>
          ) : (
            <div className="table-wrap">
              <table className="keys-table stack">
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Key</th>
                    <th scope="col">Created</th>
                    <th scope="col">Last used</th>
                    <th scope="col" className="num">
                      Spend
                    </th>
                    <th scope="col">Limits</th>
                    <th scope="col">Status</th>
                    <th scope="col">
                      <span className="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {list.data.map((k) => (
                    <tr key={k.id} className={k.status === 'revoked' ? 'muted' : undefined}>
                      <td className="name-cell" data-label="Name">
                        {k.name}
                      </td>
                      <td className="nowrap" data-label="Key">
                        <code>{k.hint}</code>
                      </td>
                      <td className="when" data-label="Created">
                        {dateTime(k.created_at)}
                      </td>
                      <td className="when" data-label="Last used">
                        {dateTime(k.last_used_at)}
                      </td>
                      <td className="num" data-label="Spend">
                        {usd(k.spend)}
                      </td>
                      <td className="limits-cell" data-label="Limits">
                        {k.status === 'active' && <ControlsSummary c={controlsOf(k.id)} />}
                      </td>
                      <td data-label="Status">
                        <span className={`status ${k.status}`}>
                          {k.status === 'active' ? 'Active' : 'Revoked'}
                        </span>
                      </td>
                      <td className="actions-cell">
                        {k.status === 'active' && (
                          <div className="row-actions">
                            <button
                              type="button"
                              className="button secondary small"
                              aria-label={`Edit key ${k.name}`}
                              disabled={!controlsOf(k.id)}
                              onClick={() => {
                                setSaved(undefined);
                                setEditing(controlsOf(k.id));
                              }}
                            >
                              Edit
                            </button>
                            <button
                              type="button"
                              className="button danger small"
                              aria-label={`Revoke key ${k.name}`}
                              onClick={() => {
                                setRevokeError(undefined);
                                setRevoking(k);
                              }}
                            >
                              Revoke
                            </button>
                          </div>
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          {list.data.length > 0 && (
            <p className="hint">
              “Last used” is recorded at most once a minute per key: it can lag by up to a minute.
            </p>
          )}
        </section>
      )}
      <Dialog
        wide
        open={editing !== undefined}
        title={editing ? `Edit key “${editing.name}”` : 'Edit key'}
        onClose={() => setEditing(undefined)}
      >
        {editing && (
          <EditControlsForm
            controls={editing}
            models={models.data?.data}
            onSave={save}
            onCancel={() => setEditing(undefined)}
          />
        )}
      </Dialog>
      <Dialog open={revoking !== undefined} title="Revoke this key?" onClose={() => setRevoking(undefined)}>
        {revoking && (
          <>
            <p>
              Requests with <strong>{revoking.name}</strong> (<code>{revoking.hint}</code>) will be refused at
              once with 401. This cannot be undone.
            </p>
            <ErrorNotice>{revokeError}</ErrorNotice>
            <div className="actions">
              <button type="button" className="button secondary" onClick={() => setRevoking(undefined)}>
                Cancel
              </button>
              <button type="button" className="button danger" disabled={busy} onClick={() => void revoke()}>
                {busy ? 'Revoking…' : 'Revoke key'}
              </button>
            </div>
          </>
        )}
      </Dialog>
    </>
  );
}
