/// <reference lib="dom" />
import { readFile } from 'node:fs/promises';
import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createUser, type Harness, startDashboardHarness } from '../dashboard/dashboard-helpers.js';
import { browserTestsCanRun, launchChromium } from './browser.js';
import { apiGet, go, logIn, Sessions } from './session.js';

/** Issue 48's dashboard: a key's limits set, seen and changed; top-up codes made by an admin and redeemed. */
const canRun = browserTestsCanRun();

let h: Harness;
let url: string;
let browser: Browser;
const sessions = new Sessions(
  () => browser,
  () => url,
);

beforeAll(async () => {
  if (!canRun) return;
  h = await startDashboardHarness({ env: { SIGNUP: 'open' } });
  url = await h.server.listen();
  browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await h?.close();
});
afterEach(() => sessions.checkErrors());

interface Controls {
  id: string;
  name: string;
  limit: { amount: number; spent: number; remaining: number; reset: string; resets_at: string | null } | null;
  expires_at: string | null;
  allowed: string[] | null;
  rpm: number | null;
  tpm: number | null;
}

/** `Dec 7, 00:00:00 UTC`, as the dashboard writes a time of this year. */
function shown(iso: string): string {
  const d = new Date(iso);
  const month = d.toLocaleString('en-US', { month: 'short', timeZone: 'UTC' });
  return `${month} ${d.getUTCDate()}, ${iso.slice(11, 19)} UTC`;
}

describe.skipIf(!canRun)('key limits and top-up codes in the browser', () => {
  it("sets a key's limits at creation, shows its spend in the window, and changes them", async () => {
    const user = await createUser(h, { usd: 5 });
    const { context, page } = await sessions.context(1280);
    await logIn(page, user.email);
    await go(page, 'API keys');

    const form = page.getByRole('form', { name: 'Create a key' });
    await form.getByLabel('Name').fill('ci runner');
    await form.getByText('Limits and restrictions (optional)').click();
    // A wrong amount is refused in the form, in words, and nothing is created.
    await form.getByLabel('Spend limit (USD)').fill('five');
    await form.getByRole('button', { name: 'Create key' }).click();
    expect(await form.getByRole('alert').innerText()).toContain('Enter the spend limit in dollars');
    expect((await apiGet<{ data: unknown[] }>(page, '/keys')).data).toHaveLength(0);

    await form.getByLabel('Spend limit (USD)').fill('2.5');
    await form.getByLabel('Limit resets').selectOption('weekly');
    await form.getByLabel('Requests per minute').fill('30');
    await form.getByLabel('Only the ones chosen below').check();
    await form.getByRole('group', { name: 'Providers' }).getByLabel('prov-deepseek', { exact: true }).check();
    await form.getByRole('button', { name: 'Create key' }).click();
    const secret = await page.getByTestId('new-key').innerText();
    await page.getByRole('button', { name: 'I have copied the key' }).click();

    let [controls] = (await apiGet<{ data: Controls[] }>(page, '/keys/controls')).data;
    expect(controls).toMatchObject({
      name: 'ci runner',
      limit: { amount: 2.5, spent: 0, reset: 'weekly' },
      allowed: ['prov-deepseek'],
      rpm: 30,
      tpm: null,
      expires_at: null,
    });
    const limitCell = page.getByTestId('key-limit');
    const resetsAt = controls?.limit?.resets_at ?? '';
    expect(await limitCell.innerText()).toBe(
      `$0.000000 of $2.500000 spent this week, resets ${shown(resetsAt)}`,
    );

    // A call with the key (auto: the only provider it may use) shows as the window's spend.
    const call = await h.chat(secret);
    expect(call.status).toBe(200);
    const cost = (call.body.meta as { cost: { total: number } }).cost.total;
    expect(cost).toBeGreaterThan(0);
    expect((call.body.meta as { provider: string }).provider).toBe('prov-deepseek');
    await page.reload();
    await limitCell.waitFor();
    expect(await limitCell.innerText()).toContain(`$${cost.toFixed(6)} of $2.500000 spent this week`);

    // Change every control in the edit dialog.
    await page.getByRole('button', { name: 'Edit key ci runner' }).click();
    const dialog = page.getByRole('dialog', { name: 'Edit key “ci runner”' });
    await dialog.getByLabel('Name').fill('ci runner (nightly)');
    await dialog.getByLabel('Spend limit (USD)').fill('1');
    await dialog.getByLabel('Limit resets').selectOption('daily');
    await dialog.getByLabel('Expires (UTC)').fill('2099-06-30T12:00');
    await dialog.getByLabel('Requests per minute').fill('');
    await dialog.getByLabel('Tokens per minute').fill('5000');
    const models = dialog.getByRole('group', { name: 'Models' });
    const qwenModel = (
      await apiGet<{ data: { provider: string; model: string }[] }>(page, '/models')
    ).data.find((m) => m.provider === 'prov-qwen')?.model;
    await models.getByLabel(String(qwenModel), { exact: true }).check();
    await dialog.getByRole('button', { name: 'Save changes' }).click();
    await page.locator('#main').getByText('Key “ci runner (nightly)” saved.').waitFor();

    [controls] = (await apiGet<{ data: Controls[] }>(page, '/keys/controls')).data;
    expect(controls).toMatchObject({
      name: 'ci runner (nightly)',
      limit: { amount: 1, reset: 'daily' },
      allowed: ['prov-deepseek', qwenModel],
      rpm: null,
      tpm: 5000,
      expires_at: '2099-06-30T12:00:00.000Z',
    });
    // The charge stays in the window it was made in: the window is now today's, the call was today.
    expect(controls?.limit?.spent).toBe(cost);
    const row = page.getByRole('row', { name: /ci runner \(nightly\)/ });
    const text = await row.innerText();
    expect(text).toContain(
      `$${cost.toFixed(6)} of $1.000000 spent today, resets ${shown(controls?.limit?.resets_at ?? '')}`,
    );
    expect(text).toContain('Expires Jun 30, 2099, 12:00:00 UTC');
    expect(text).toContain('5,000 tokens per minute');
    expect(text).toContain(`Only prov-deepseek, ${qwenModel}`);

    // The models page says which models the key may use.
    await go(page, 'Models and prices');
    const keysOf = (provider: string) =>
      page.locator(`tr[data-provider="${provider}"]`).getByTestId('model-keys').innerText();
    // Its one key may use these two, and not the others.
    expect(await keysOf('prov-deepseek')).toBe('All your keys');
    expect(await keysOf('prov-qwen')).toBe('All your keys');
    expect(await keysOf('prov-kimi')).toBe('None of your keys');
    await context.close();
  }, 120_000);

  it('an admin makes a batch; a user redeems one code once; the balance and history show it exactly', async () => {
    const admin = await createUser(h, { role: 'admin' });
    const user = await createUser(h, { usd: 1 });
    const a = await sessions.context(1280);
    await logIn(a.page, admin.email);
    await go(a.page, 'Top-up codes');
    await a.page.getByLabel('Amount of each code (USD)').fill('2.123456789');
    await a.page.getByLabel('How many codes').fill('3');
    await a.page.getByLabel('Note (optional)').fill('e2e giveaway');
    await a.page.getByRole('button', { name: 'Create codes' }).click();
    const codes = (await a.page.getByTestId('new-codes').inputValue()).split('\n');
    expect(codes).toHaveLength(3);
    for (const c of codes) expect(c).toMatch(/^tg-/);
    const [download] = await Promise.all([
      a.page.waitForEvent('download'),
      a.page.getByRole('button', { name: 'Download CSV' }).click(),
    ]);
    const csv = (await readFile(await download.path(), 'utf8')).trimEnd().split('\r\n');
    const batch = (await apiGet<{ data: { id: string }[] }>(a.page, '/admin/code-batches')).data[0]?.id;
    expect(csv[0]).toBe('code,amount_usd,batch_id,expires_at');
    expect(csv.slice(1)).toEqual(codes.map((c) => `${c},2.123456789,${batch},`));
    expect(download.suggestedFilename()).toBe(`tollgate-codes-${batch}.csv`);
    await a.page.getByRole('button', { name: 'I have saved the codes' }).click();
    // Shown once: gone from the page once saved.
    expect(await a.page.getByTestId('new-codes').count()).toBe(0);
    const batchRow = a.page.locator(`tr[data-batch="${batch}"]`);
    expect(await batchRow.getByTestId('redeemed').innerText()).toBe('0 of 3');

    const u = await sessions.context(390);
    await logIn(u.page, user.email);
    await go(u.page, 'Top up');
    const code = u.page.getByLabel('Code', { exact: true });
    await code.fill('tg-not-a-real-code-at-all');
    await u.page.getByRole('button', { name: 'Redeem' }).click();
    expect(await u.page.getByRole('alert').innerText()).toContain('unknown, already used or expired');
    await code.fill(codes[0] ?? '');
    await u.page.getByRole('button', { name: 'Redeem' }).click();
    await u.page
      .locator('#main')
      .getByText('Added $2.123456789. Your balance is now $3.123456789.')
      .waitFor();
    const account = await apiGet<{ balance: number }>(u.page, '/account');
    expect(account.balance).toBe(3.123456789);
    const history = u.page.getByTestId('credit-history');
    await history.getByText(String(batch)).waitFor();
    const first = await history.locator('tbody tr').first().innerText();
    expect(first).toContain('$2.123457');
    expect(first).toContain('top-up code: e2e giveaway');
    // The same code again: refused, and the balance does not move.
    await code.fill(codes[0] ?? '');
    await u.page.getByRole('button', { name: 'Redeem' }).click();
    expect(await u.page.getByRole('alert').innerText()).toContain('unknown, already used or expired');
    expect((await apiGet<{ balance: number }>(u.page, '/account')).balance).toBe(3.123456789);

    await a.page.reload();
    expect(await batchRow.getByTestId('redeemed').innerText()).toBe('1 of 3');
    await batchRow.getByRole('button', { name: `Show codes of batch ${batch}` }).click();
    await batchRow.getByText(`redeemed by ${user.email}`).waitFor();
    expect(await batchRow.getByText('not redeemed').count()).toBe(2);
    await a.context.close();
    await u.context.close();
  }, 120_000);

  it('too many wrong codes: the form says redeeming is paused', async () => {
    const user = await createUser(h, { usd: 1 });
    const { context, page } = await sessions.context(1280);
    await logIn(page, user.email);
    await go(page, 'Top up');
    const code = page.getByLabel('Code', { exact: true });
    let said = '';
    for (let i = 0; i < 12 && !said.includes('Too many'); i++) {
      await code.fill(`tg-wrong-${i}`);
      await page.getByRole('button', { name: 'Redeem' }).click();
      await page.getByRole('alert').waitFor();
      said = await page.getByRole('alert').innerText();
    }
    expect(said).toMatch(
      /^Too many wrong codes: redeeming is paused for this account\. .*Try again in \d+ minutes?\./,
    );
    await context.close();
  }, 120_000);
});
