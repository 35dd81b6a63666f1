import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createUser, type Harness, PASSWORD, startDashboardHarness } from '../dashboard/dashboard-helpers.js';
import { browserTestsCanRun, launchChromium } from './browser.js';

/* The pages of every day: the playground, the admin's view of every account, the audit log. */

const canRun = browserTestsCanRun();

let h: Harness;
let url: string;
let browser: Browser;

beforeAll(async () => {
  if (!canRun) return;
  h = await startDashboardHarness({ env: { STREAMING: 'on' } });
  url = await h.server.listen();
  browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await h?.close();
});

const pageErrors: string[] = [];
afterEach(() => {
  const errors = pageErrors.splice(0);
  expect(errors).toEqual([]);
});

async function signedIn(email: string, width = 1280): Promise<Page> {
  const context = await browser.newContext({ viewport: { width, height: 800 }, baseURL: url });
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  page.on('pageerror', (err) => pageErrors.push(`${page.url()}: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error' && !/status of (401|402|403)/.test(msg.text())) {
      pageErrors.push(`${page.url()}: ${msg.text()}`);
    }
  });
  await page.goto('/login');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  return page;
}

async function balanceNano(accountId: string): Promise<number> {
  return (await h.server.store.getAccount(accountId))?.balanceNano ?? Number.NaN;
}

/** `$1,234.567890` → nanodollars. */
function nanoOfShown(text: string): number {
  return Math.round(Number(text.replace(/[$,]/g, '')) * 1e9);
}

describe.skipIf(!canRun)('the pages of every day (headless Chromium)', { timeout: 90_000 }, () => {
  for (const mode of ['streamed', 'whole'] as const) {
    it(`playground: a ${mode} answer with its tokens, cost and balance, billed to the account and listed as Playground`, async () => {
      const user = await createUser(h, { usd: 3 });
      const page = await signedIn(user.email);
      await page.getByRole('link', { name: 'Playground', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Playground' }).waitFor();
      await page.getByLabel('Provider or model').selectOption('prov-qwen');
      await page.getByLabel('Prompt').fill('Say something about toll roads.');
      const box = page.getByLabel('Stream the answer');
      if (mode === 'whole') await box.uncheck();
      else expect(await box.isChecked()).toBe(true);
      const before = await balanceNano(user.id);
      await page.getByRole('button', { name: 'Send' }).click();
      const bill = page.getByTestId('playground-bill');
      await bill.waitFor();
      expect((await page.getByTestId('playground-answer').innerText()).length).toBeGreaterThan(0);
      const facts = await bill.locator('dd').allInnerTexts();
      expect(facts[0]).toBe('prov-qwen');
      expect(facts[1]).toMatch(/^\d[\d,]* in · \d[\d,]* out$/);
      const cost = nanoOfShown(facts[2] ?? '');
      const after = await balanceNano(user.id);
      expect(cost).toBeGreaterThan(0);
      // Shown to the micro-dollar: the balance fell by the call's charge, which the page shows rounded.
      const rows = await h.server.store.listUsage(user.id, { limit: 5 });
      expect(rows).toHaveLength(1);
      const charged = (rows[0]?.inputCostNano ?? 0) + (rows[0]?.outputCostNano ?? 0);
      expect(before - after).toBe(charged);
      expect(Math.abs(cost - charged)).toBeLessThan(1000);
      expect(Math.abs(nanoOfShown(facts[3] ?? '') - after)).toBeLessThan(1000);
      expect(rows[0]?.keyId).toBe('playground');

      await page.getByRole('link', { name: 'Usage', exact: true }).click();
      await page.getByRole('cell', { name: 'Playground', exact: true }).first().waitFor();
      await page.context().close();
    });
  }

  it('playground: a refusal is said in plain words', async () => {
    const user = await createUser(h, { usd: 0 });
    const page = await signedIn(user.email, 390);
    await page.goto('/playground');
    await page.getByLabel('Prompt').fill('Hello');
    await page.getByRole('button', { name: 'Send' }).click();
    await page
      .getByRole('alert')
      .filter({ hasText: /balance/i })
      .waitFor();
    await page.context().close();
  });

  it("admin's view: spend and calls of every account, one account's credits and charges, the range in the URL", async () => {
    const root = await createUser(h, { role: 'admin', email: `root-${Date.now()}@e2e.test` });
    const page = await signedIn(root.email);
    await page.getByRole('link', { name: 'Spend', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Spend and calls' }).waitFor();
    const today = new Date().toISOString().slice(0, 10);
    await page.getByLabel('Totals from').fill(today);
    await page.getByLabel('Totals to').fill(today);
    await page.getByLabel('Totals per').selectOption('hour');
    await page.getByRole('button', { name: 'Show' }).click();
    await page
      .getByTestId('report-scope')
      .filter({ hasText: `${today} to ${today}, per hour, times in UTC` })
      .waitFor();
    expect(page.url()).toContain(`from=${today}`);
    expect(page.url()).toContain('interval=hour');
    // Every account's charges, summed from the store, are the spend shown (to the micro-dollar).
    const rows = await h.server.store
      .dashboard()
      .usageTotals({ from: 0, to: Date.now() + 1, bucketMs: 3_600_000 });
    const total = rows.reduce((s, r) => s + r.costNano, 0);
    expect(total).toBeGreaterThan(0);
    const shown = nanoOfShown(await page.getByTestId('report-spend').innerText());
    expect(Math.abs(shown - total)).toBeLessThan(1000);
    const calls = Number((await page.getByTestId('report-calls').innerText()).replace(/,/g, ''));
    expect(calls).toBe(rows.reduce((s, r) => s + r.requests, 0));
    // One account: its credits and calls.
    const account = page.getByRole('region', { name: 'By account' }).getByRole('link').first();
    const email = await account.innerText();
    await account.click();
    await page.getByRole('heading', { name: `${email}: credits and charges` }).waitFor();
    await page.getByText('$3.000000').first().waitFor();
    expect(page.url()).toContain('account_id=');
    await page.context().close();
  });

  it('audit log: an admin grant shows with who and what', async () => {
    const root = await createUser(h, { role: 'admin', email: `auditor-${Date.now()}@e2e.test` });
    const user = await createUser(h);
    const page = await signedIn(root.email);
    const csrf = await page.evaluate(async () => {
      const res = await fetch('/dashboard/api/session');
      return ((await res.json()) as { csrf_token: string }).csrf_token;
    });
    const granted = await page.evaluate(
      async ({ id, token }) => {
        const res = await fetch(`/dashboard/api/admin/accounts/${id}/credits`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-csrf-token': token },
          body: JSON.stringify({ amount: '0.25', note: 'audit me' }),
        });
        return res.status;
      },
      { id: user.id, token: csrf },
    );
    expect(granted).toBe(200);
    await page.getByRole('link', { name: 'Audit log', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Audit log' }).waitFor();
    const row = page.getByRole('row').filter({ hasText: 'audit me' });
    await row.waitFor();
    expect(await row.innerText()).toContain(root.email);
    expect(await row.innerText()).toContain('Granted credit');
    expect(await row.innerText()).toContain('amount: $0.250000');
    await page.context().close();
  });

  it('usage totals: by model, provider and key, per hour in the chosen zone, kept in the URL', async () => {
    const user = await createUser(h, { usd: 2 });
    const page = await signedIn(user.email);
    // Two calls through the playground on two providers.
    for (const provider of ['prov-qwen', 'prov-claude']) {
      await page.goto('/playground');
      await page.getByLabel('Provider or model').selectOption(provider);
      await page.getByLabel('Prompt').fill(`Hello ${provider}`);
      await page.getByRole('button', { name: 'Send' }).click();
      await page.getByTestId('playground-bill').waitFor();
    }
    const today = new Date().toISOString().slice(0, 10);
    await page.goto('/usage');
    await page.getByRole('link', { name: 'Totals by model, provider and key' }).click();
    await page.getByLabel('Totals from').fill(today);
    await page.getByLabel('Totals to').fill(today);
    await page.getByLabel('Totals per').selectOption('hour');
    await page.getByRole('button', { name: 'Show' }).click();
    await page
      .getByTestId('report-scope')
      .filter({ hasText: `${today} to ${today}, per hour, times in UTC` })
      .waitFor();
    expect(page.url()).toContain('interval=hour');
    expect(page.url()).toContain('view=totals');
    const byProvider = await page
      .getByRole('region', { name: 'By provider' })
      .locator('tbody tr')
      .allInnerTexts();
    expect(byProvider.map((r) => r.split('\t')[0]).sort()).toEqual(['prov-claude', 'prov-qwen']);
    const byKey = await page.getByRole('region', { name: 'By key' }).locator('tbody tr').allInnerTexts();
    expect(byKey.map((r) => r.split('\t')[0])).toEqual(['Playground']);
    expect(await page.getByRole('region', { name: 'By model' }).locator('tbody tr').count()).toBe(2);
    const rows = await h.server.store.listUsage(user.id, { limit: 10 });
    const total = rows.reduce((s, r) => s + r.inputCostNano + r.outputCostNano, 0);
    expect(Math.abs(nanoOfShown(await page.getByTestId('report-spend').innerText()) - total)).toBeLessThan(
      1000,
    );
    // A reload keeps the range (it is in the URL).
    await page.reload();
    await page.getByTestId('report-scope').filter({ hasText: 'per hour' }).waitFor();
    await page.context().close();
  });
});
