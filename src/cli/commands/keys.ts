import pino from 'pino';
import { createKey } from '../../auth/keys.js';
import { announce } from '../../cluster/index.js';
import { CliError, usageError } from '../cli-error.js';
import { accountByEmail, normalizeEmail, withStore } from '../context.js';
import { isoOrNull, type Output } from '../output.js';

/** `tollgate keys create --email E --name NAME` — prints the key once. */
export async function keysCreate(args: { email: string | undefined; name: string | undefined }, out: Output) {
  const email = normalizeEmail(args.email);
  if (args.name === undefined) throw usageError('--name is required: give the key a descriptive name');
  const name = args.name;
  await withStore(async (store) => {
    const account = await accountByEmail(store, email);
    const result = await createKey(store, account.id, name);
    if (!result.ok) throw new CliError(result.message, 1, result.reason);
    out.result(
      { id: result.key.id, name: result.key.name, key: result.secret },
      `${result.secret}\n\nKey "${result.key.name}" (${result.key.id}) created for ${account.email}.\nThis is the only time the key is shown: store it now.`,
    );
  });
}

/** `tollgate keys list --email E` */
export async function keysList(args: { email: string | undefined }, out: Output) {
  const email = normalizeEmail(args.email);
  await withStore(async (store) => {
    const account = await accountByEmail(store, email);
    const keys = await store.listApiKeys(account.id);
    const rows = keys.map((k) => ({
      id: k.id,
      name: k.name,
      hint: k.hint,
      created_at: isoOrNull(k.createdAt),
      last_used_at: isoOrNull(k.lastUsedAt),
      revoked_at: isoOrNull(k.revokedAt),
    }));
    const human =
      rows.length === 0
        ? `No keys for ${account.email}.`
        : rows
            .map((r) => `${r.id}  ${r.hint}  ${r.revoked_at ? 'revoked' : 'active '}  ${r.name}`)
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
