import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.js';
import { runCli } from '../helpers/cli.js';
import {
  codeOf,
  createUser,
  DashboardClient,
  type Harness,
  startDashboardHarness,
} from './dashboard-helpers.js';

interface Entry {
  id: string;
  at: string;
  actor: string;
  actor_id: string | null;
  action: string;
  account_id: string | null;
  target_id: string | null;
  detail: Record<string, unknown> | null;
}

let h: Harness;
let admin: DashboardClient;
let root: { id: string; email: string };

beforeAll(async () => {
  h = await startDashboardHarness({ env: { SIGNUP: 'invite' } });
  root = await createUser(h, { role: 'admin', email: 'root@audit.test' });
  admin = new DashboardClient(h);
  await admin.login(root.email);
});
afterAll(async () => {
  await h?.close();
});

async function newest(): Promise<Entry> {
  const res = await admin.get('/admin/audit?limit=1');
  expect(res.status).toBe(200);
  return (res.body.data as Entry[])[0] as Entry;
}

describe('the audit log of admin actions (dashboard)', () => {
  it('each action writes its entry: who, when, what, on which account and object', async () => {
    const user = await createUser(h);
    const started = Date.now();
    const expectEntry = async (action: string, fields: Partial<Entry>) => {
      const e = await newest();
      expect(e).toMatchObject({ action, actor: root.email, actor_id: root.id, ...fields });
      expect(Date.parse(e.at)).toBeGreaterThanOrEqual(started - 1000);
      return e;
    };

    expect(
      (await admin.post(`/admin/accounts/${user.id}/credits`, { amount: '1.5', note: 'welcome' })).status,
    ).toBe(200);
    await expectEntry('credit.grant', {
      account_id: user.id,
      detail: { amount_nano: 1_500_000_000, note: 'welcome' },
    });

    expect((await admin.post(`/admin/accounts/${user.id}/disable`)).status).toBe(200);
    await expectEntry('account.disable', { account_id: user.id });
    expect((await admin.post(`/admin/accounts/${user.id}/enable`)).status).toBe(200);
    await expectEntry('account.enable', { account_id: user.id });

    const invite = await admin.post('/admin/invites', { email: 'friend@audit.test', expires_in_days: 3 });
    expect(invite.status).toBe(201);
    await expectEntry('invite.create', {
      target_id: invite.body.id as string,
      detail: { email: 'friend@audit.test', note: null, expires_in_days: 3 },
    });
    expect((await admin.delete(`/admin/invites/${invite.body.id as string}`)).status).toBe(200);
    await expectEntry('invite.revoke', { target_id: invite.body.id as string });

    const batch = await admin.post('/admin/code-batches', { amount: '2', count: 3 });
    expect(batch.status).toBe(201);
    const batchId = (batch.body.batch as { id: string } | undefined)?.id ?? (batch.body.id as string);
    await expectEntry('code_batch.create', {
      target_id: batchId,
      detail: { count: 3, amount_nano: 2_000_000_000 },
    });

    // A refused action writes nothing.
    const before = await newest();
    expect((await admin.post(`/admin/accounts/${user.id}/credits`, { amount: '-1', note: 'x' })).status).toBe(
      400,
    );
    expect((await newest()).id).toBe(before.id);

    // Newest first, paged by cursor.
    const page = await admin.get('/admin/audit?limit=2');
    const data = page.body.data as Entry[];
    expect(data.map((e) => e.action)).toEqual(['code_batch.create', 'invite.revoke']);
    const next = await admin.get(`/admin/audit?limit=10&before=${page.body.next_cursor as string}`);
    expect((next.body.data as Entry[]).map((e) => e.action)).toEqual([
      'invite.create',
      'account.enable',
      'account.disable',
      'credit.grant',
    ]);
  });

  it('is shown to admins only', async () => {
    const user = await createUser(h);
    const c = new DashboardClient(h);
    await c.login(user.email);
    const res = await c.get('/admin/audit');
    expect(res.status).toBe(403);
    expect(codeOf(res)).toBe('forbidden');
    expect(codeOf(await admin.get('/admin/audit?before=nope'))).toBe('invalid_request');
  });
});

// Runs bin/tollgate, i.e. the compiled dist/: `npm run build` first (npm test does).
describe('the audit log of admin actions (CLI)', () => {
  it('credits add, codes create and keys create, update and revoke write entries by the cli', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-audit-cli-'));
    const env = { DATABASE_URL: `sqlite:${join(dir, 'cli.db')}`, LOG_LEVEL: 'silent' };
    try {
      const created = await runCli(['accounts', 'create', '--email', 'u@cli.test', '--json'], env);
      expect(created.code).toBe(0);
      const accountId = (JSON.parse(created.stdout) as { id: string }).id;
      const run = async (args: string[]) => {
        const r = await runCli([...args, '--json'], env);
        expect(r.code, r.stderr).toBe(0);
        return JSON.parse(r.stdout) as Record<string, unknown>;
      };
      await run(['credits', 'add', '--email', 'u@cli.test', '--amount', '3', '--note', 'cli grant']);
      const batch = (await run(['codes', 'create', '--amount', '1', '--count', '2'])) as {
        batch: { id: string };
      };
      const key = (await run(['keys', 'create', '--email', 'u@cli.test', '--name', 'ci'])) as { id: string };
      await run(['keys', 'update', '--email', 'u@cli.test', '--id', key.id, '--name', 'ci-2']);
      await run(['keys', 'revoke', '--email', 'u@cli.test', '--id', key.id]);

      const store = await openStore(env.DATABASE_URL);
      try {
        const entries = (await store.dashboard().listAudit({ limit: 10 })).reverse();
        expect(entries.map((e) => [e.action, e.actor, e.actorId, e.accountId, e.targetId])).toEqual([
          ['credit.grant', 'cli', null, accountId, null],
          ['code_batch.create', 'cli', null, null, batch.batch.id],
          ['key.create', 'cli', null, accountId, key.id],
          ['key.update', 'cli', null, accountId, key.id],
          ['key.revoke', 'cli', null, accountId, key.id],
        ]);
        expect(entries[0]?.detail).toEqual({ amount_nano: 3_000_000_000, note: 'cli grant' });
        expect(entries[3]?.detail).toEqual({ name: 'ci-2' });
      } finally {
        await store.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
