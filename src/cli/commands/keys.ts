import pino from 'pino';
import { createKey } from '../../auth/keys.js';
import { announce } from '../../cluster/index.js';
import { nanoToUsd } from '../../money/money.js';
import { remaining } from '../../store/key-window-rules.js';
import type { ApiKeyInfo } from '../../store/types.js';
import { CliError, usageError } from '../cli-error.js';
import { accountByEmail, cliAudit, normalizeEmail, withStore } from '../context.js';
import { type KeyControlArgs, keyChangesOf } from '../key-control-options.js';
import { isoOrNull, type Output } from '../output.js';

/** A key's controls as `keys list`, `create` and `update` print them (amounts in USD). */
function controlsRow(k: ApiKeyInfo, now: number) {
  const c = k.controls;
  return {
    limit: c.limitNano === null ? null : nanoToUsd(c.limitNano),
    limit_reset: c.limitReset,
    spent_in_window: c.limitNano === null ? null : nanoToUsd(k.window.spentNano),
    remaining:
      c.limitNano === null
        ? null
        : nanoToUsd(remaining({ limitNano: c.limitNano, reset: c.limitReset, ...k.window }, now)),
    expires_at: isoOrNull(c.expiresAt),
    allowed: c.allowed,
    rpm: c.rpm,
    tpm: c.tpm,
  };
}

function controlsText(row: ReturnType<typeof controlsRow>): string {
  const parts: string[] = [];
  if (row.limit !== null) {
    parts.push(
      `limit $${row.limit} ${row.limit_reset}, spent $${row.spent_in_window}, left $${row.remaining}`,
    );
  }
  if (row.expires_at) parts.push(`expires ${row.expires_at}`);
  if (row.allowed) parts.push(`allows ${row.allowed.join(',')}`);
  if (row.rpm !== null) parts.push(`${row.rpm} rpm`);
  if (row.tpm !== null) parts.push(`${row.tpm} tpm`);
  return parts.join('; ');
}

/** `tollgate keys create --email E --name NAME [controls]` — prints the key once. */
export async function keysCreate(args: { email: string | undefined } & KeyControlArgs, out: Output) {
  const email = normalizeEmail(args.email);
  if (args.name === undefined) throw usageError('--name is required: give the key a descriptive name');
  const name = args.name;
  const { name: _, ...controls } = keyChangesOf(args, false);
  await withStore(async (store) => {
    const account = await accountByEmail(store, email);
    const result = await createKey(store, account.id, name);
    if (!result.ok) throw new CliError(result.message, 1, result.reason);
    const key =
      Object.keys(controls).length > 0
        ? await store.updateApiKey(account.id, result.key.id, controls)
        : undefined;
    await cliAudit(store, {
      action: 'key.create',
      accountId: account.id,
      targetId: result.key.id,
      detail: { name, ...controls },
    });
    const row = key ? controlsRow(key, Date.now()) : undefined;
    out.result(
      { id: result.key.id, name: result.key.name, key: result.secret, ...(row ?? {}) },
      `${result.secret}\n\nKey "${result.key.name}" (${result.key.id}) created for ${account.email}.${row ? ` ${controlsText(row)}.` : ''}\nThis is the only time the key is shown: store it now.`,
    );
  });
}

/** `tollgate keys update --email E --id ID [--name N] [controls]` */
export async function keysUpdate(
  args: { email: string | undefined; id: string | undefined } & KeyControlArgs,
  out: Output,
) {
  const email = normalizeEmail(args.email);
  if (args.id === undefined) throw usageError('--id is required (see `tollgate keys list`)');
  const id = args.id;
  const changes = keyChangesOf(args, true);
  if (Object.keys(changes).length === 0) {
    throw usageError(
      'nothing to change: give --name, --limit, --limit-reset, --expires, --allow, --rpm or --tpm',
    );
  }
  await withStore(async (store, config) => {
    const account = await accountByEmail(store, email);
    const key = await store.updateApiKey(account.id, id, changes);
    if (!key) throw new CliError(`no key ${id} for ${account.email}`, 1, 'key_not_found');
    // Running instances re-read the key at once when told over Redis (as for a revocation: the cached
    // record is dropped); otherwise within KEY_CACHE_TTL_MS.
    await cliAudit(store, {
      action: 'key.update',
      accountId: account.id,
      targetId: id,
      detail: { ...changes },
    });
    await announce(config, pino({ level: 'silent' }), { kind: 'key_revoked', keyId: id });
    const row = controlsRow(key, Date.now());
    out.result(
      { id, name: key.name, ...row },
      `Updated key ${id} "${key.name}". ${controlsText(row)}`.trim(),
    );
  });
}

/** `tollgate keys list --email E` */
export async function keysList(args: { email: string | undefined }, out: Output) {
  const email = normalizeEmail(args.email);
  await withStore(async (store) => {
    const account = await accountByEmail(store, email);
    const keys = await store.listApiKeys(account.id);
    const now = Date.now();
    const rows = keys.map((k) => ({
      id: k.id,
      name: k.name,
      hint: k.hint,
      created_at: isoOrNull(k.createdAt),
      last_used_at: isoOrNull(k.lastUsedAt),
      revoked_at: isoOrNull(k.revokedAt),
      ...controlsRow(k, now),
    }));
    const human =
      rows.length === 0
        ? `No keys for ${account.email}.`
        : rows
            .map((r) => {
              const controls = controlsText(r);
              return `${r.id}  ${r.hint}  ${r.revoked_at ? 'revoked' : 'active '}  ${r.name}${controls ? `  (${controls})` : ''}`;
            })
            .join('\n');
    out.result({ email: account.email, keys: rows }, human);
  });
}

/** `tollgate keys revoke --email E --id ID` */
export async function keysRevoke(args: { email: string | undefined; id: string | undefined }, out: Output) {
  const email = normalizeEmail(args.email);
  if (args.id === undefined) throw usageError('--id is required (see `tollgate keys list`)');
  const id = args.id;
  await withStore(async (store, config) => {
    const account = await accountByEmail(store, email);
    const result = await store.revokeApiKey(account.id, id);
    if (result === 'not_found') throw new CliError(`no key ${id} for ${account.email}`, 1, 'key_not_found');
    await cliAudit(store, { action: 'key.revoke', accountId: account.id, targetId: id });
    // Running instances drop the key from their caches at once when told over Redis; without it they
    // stop accepting it within KEY_CACHE_TTL_MS (at most 1 s) anyway.
    const told = await announce(config, pino({ level: 'silent' }), { kind: 'key_revoked', keyId: id });
    const note = config.redisUrl
      ? told
        ? ' Running instances were told over Redis.'
        : ' Redis did not answer: running instances stop accepting the key within 1 s.'
      : '';
    out.result(
      { id, revoked: true, already_revoked: result === 'already_revoked' },
      result === 'already_revoked' ? `Key ${id} was already revoked.${note}` : `Revoked key ${id}.${note}`,
    );
  });
}
