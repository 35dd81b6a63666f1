/// <reference lib="dom" />
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../../src/auth/keys.js';
import { hashPassword } from '../../src/auth/passwords.js';
import { inviteCodeHash } from '../../src/dashboard/auth-routes.js';
import { createUser, type Harness, PASSWORD, startDashboardHarness } from '../dashboard/dashboard-helpers.js';
import { browserTestsCanRun, launchChromium } from './browser.js';

/**
 * The defects a walk through the dashboard found, as a new user and as the admin, each pinned by what
 * the page shows: its elements, text, focus and widths.
 */
const canRun = browserTestsCanRun();

let h: Harness;
let url: string;
let browser: Browser;
let admin: { id: string; email: string };

beforeAll(async () => {
  if (!canRun) return;
  h = await startDashboardHarness({ env: { SIGNUP: 'open' } });
  url = await h.server.listen();
  admin = await createUser(h, { role: 'admin', email: 'root@walk.test' });
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

function watch(page: Page): Page {
  page.setDefaultTimeout(10_000);
  page.on('pageerror', (err) => pageErrors.push(`${page.url()}: ${err.message}`));
  page.on('console', (msg) => {
    // Failed requests show as console errors too: these tests cause 4xx answers and cut the network
    // on purpose.
    if (msg.type() === 'error' && !/status of (40\d|409|429)|net::ERR_/.test(msg.text())) {
      pageErrors.push(`${page.url()}: ${msg.text()}`);
    }
  });
  return page;
}

async function newPage(
  width = 1280,
  options: { timezoneId?: string } = {},
): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({
    viewport: { width, height: 844 },
    baseURL: url,
    acceptDownloads: true,
    ...options,
  });
  context.on('page', watch);
  const page = await context.newPage();
  return { context, page };
}

async function logIn(page: Page, email: string): Promise<void> {
  await page.goto('/login');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
}

async function newKey(accountId: string, name: string): Promise<string> {
  const key = await createKey(h.server.store, accountId, name);
  if (!key.ok) throw new Error(key.message);
  return key.secret;
}

/** What the page's script sees from the dashboard API (with the page's cookie). */
async function apiGet(page: Page, path: string): Promise<Record<string, unknown>> {
  return (await page.evaluate((p) => fetch(`/dashboard/api${p}`).then((r) => r.json()), path)) as Record<
    string,
    unknown
  >;
}

function activeElement(page: Page): Promise<{ tag: string; text: string; id: string }> {
  return page.evaluate(() => {
    const el = document.activeElement as HTMLElement | null;
    return { tag: el?.tagName ?? '', text: el?.innerText ?? '', id: el?.id ?? '' };
  });
}

describe.skipIf(!canRun)('dashboard walk-through findings (headless Chromium)', () => {
  it('1: a logout that cannot reach the server says so, and ends the session once it can', async () => {
    const user = await createUser(h, { usd: 1 });
    const { context, page } = await newPage();
    await logIn(page, user.email);
    await context.setOffline(true);
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('heading', { name: 'Not logged out yet' }).waitFor();
    expect(await page.getByRole('alert').innerText()).toContain('still logged in');
    // The account's pages are hidden meanwhile.
    expect(await page.getByTestId('balance').count()).toBe(0);
    await context.setOffline(false);
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Log in' }).waitFor();
    expect((await apiGet(page, '/session')).authenticated).toBe(false);
    await context.close();
  });

  it('2 and 6: times are in UTC and say so; same-named keys are told apart by their hint', async () => {
    const user = await createUser(h, { usd: 1 });
    const keys = [await newKey(user.id, 'dup'), await newKey(user.id, 'dup'), await newKey(user.id, 'dup')];
    for (const k of keys) expect((await h.chat(k)).status).toBe(200);
    const { context, page } = await newPage(1280, { timezoneId: 'Pacific/Kiritimati' }); // UTC+14
    await logIn(page, user.email);
    await page.getByRole('link', { name: 'Usage', exact: true }).click();
    await page.getByRole('row', { name: /dup/ }).first().waitFor();
    const usage = (await apiGet(page, '/usage')) as {
      data: { created_at: string; key: { hint: string } }[];
    };
    const newest = usage.data[0];
    if (!newest) throw new Error('no usage');
    const time = await page.locator('.usage-table tbody tr').first().locator('td').first().innerText();
    expect(time).toContain(`${newest.created_at.slice(11, 19)} UTC`);

    // The hint beside the name, in the column and in the filter.
    for (const u of usage.data) await page.getByRole('row', { name: new RegExp(u.key.hint) }).waitFor();
    const options = await page.getByLabel('Key').locator('option').allInnerTexts();
    expect(new Set(options).size).toBe(4);
    for (const u of usage.data) expect(options.some((o) => o.includes(u.key.hint))).toBe(true);

    // The UTC day of the rows, as From and To: the rows are still there.
    const day = newest.created_at.slice(0, 10);
    await page.getByLabel('From (UTC)').fill(day);
    await page.getByLabel('To (UTC)').fill(day);
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByRole('row', { name: /dup/ }).first().waitFor();
    expect(await page.getByText('No requests match').count()).toBe(0);
    expect(await page.locator('.usage-table tbody tr').count()).toBeGreaterThanOrEqual(3);
    await context.close();
  });

  it('3 and 9: the export is of the filters shown; a reversed range is refused in words, rows hidden', async () => {
    const user = await createUser(h, { usd: 1 });
    const key = await newKey(user.id, 'export key');
    const call = await h.chat(key);
    const provider = (call.body.meta as { provider: string }).provider;
    const { context, page } = await newPage();
    await logIn(page, user.email);
    await page.goto('/usage');
    await page.getByRole('row', { name: /export key/ }).waitFor();
    const downloads: string[] = [];
    page.on('download', (d) => downloads.push(d.url()));

    // Chosen but not applied: the file has what the form shows.
    await page.getByLabel('Provider', { exact: true }).selectOption(provider);
    const download = page.waitForEvent('download');
    await page.getByRole('link', { name: 'Export CSV' }).click();
    const file = await download;
    expect(new URL(file.url()).searchParams.get('provider')).toBe(provider);
    expect(file.suggestedFilename()).toMatch(/\.csv$/);

    // A reversed range: said in the form's words, no download, no rows of the range before.
    await page.getByLabel('From (UTC)').fill('2030-01-02');
    await page.getByLabel('To (UTC)').fill('2030-01-01');
    await page.getByRole('link', { name: 'Export CSV' }).click();
    await page.getByText('“From” (2030-01-02) is after “To” (2030-01-01)').waitFor();
    await page.getByRole('button', { name: 'Apply' }).click();
    expect(await page.getByRole('alert').allInnerTexts()).toEqual([expect.stringContaining('is after “To”')]);
    expect(await page.locator('.usage-table tbody tr').count()).toBe(0);
    expect(downloads).toHaveLength(1);
    await context.close();
  });

  it('4: the overview says it is loading, never "create a key" to a user with keys, and offers Retry', async () => {
    const user = await createUser(h, { usd: 1 });
    for (let i = 1; i <= 9; i++) await newKey(user.id, `key ${i}`);
    const { context, page } = await newPage();
    await logIn(page, user.email);
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    await page.route('**/dashboard/api/account', async (route) => {
      await held;
      await route.continue();
    });
    await page.reload();
    await page.getByRole('heading', { name: 'Getting started' }).waitFor();
    await page.locator('[aria-busy="true"]').first().waitFor();
    expect(await page.locator('main').innerText()).not.toContain('create an API key');
    release();
    await page.getByTestId('balance').waitFor();
    await page.getByText('Call the API with one of your keys').waitFor();
    await page.unroute('**/dashboard/api/account');

    // The server cannot be reached: an error with Retry, still no advice about keys.
    await page.route('**/dashboard/api/account', (route) => route.abort());
    await page.reload();
    await page.getByRole('button', { name: 'Retry' }).waitFor();
    expect(await page.locator('main').innerText()).not.toContain('create an API key');
    await page.unroute('**/dashboard/api/account');
    await page.getByRole('button', { name: 'Retry' }).click();
    await page.getByTestId('balance').waitFor();
    expect(await page.getByRole('button', { name: 'Retry' }).count()).toBe(0);
    await context.close();
  });

  it('5: a 100-character key name leaves Revoke on screen at 1280 px', async () => {
    const user = await createUser(h, { usd: 1 });
    const name = 'k'.repeat(100);
    await newKey(user.id, name);
    const { context, page } = await newPage(1280);
    await logIn(page, user.email);
    await page.goto('/keys');
    const revoke = page.getByRole('button', { name: `Revoke key ${name}` });
    await revoke.waitFor();
    const box = await revoke.boundingBox();
    expect(box && box.x + box.width).toBeLessThanOrEqual(1280);
    const wrap = await page
      .locator('.table-wrap')
      .first()
      .evaluate((el) => el.scrollWidth - el.clientWidth);
    expect(wrap).toBeLessThanOrEqual(0);
    await context.close();
  });

  it('7: on a phone the admin nav, the invites, credits and providers fit the screen', async () => {
    const user = await createUser(h, { usd: 3 });
    const { context, page } = await newPage(390);
    await logIn(page, admin.email);
    const nav = page.getByRole('navigation', { name: 'Dashboard' });
    for (const link of await nav.getByRole('link').all()) {
      const box = await link.boundingBox();
      expect(box && box.x >= 0 && box.x + box.width <= 390, await link.innerText()).toBe(true);
    }
    await page.goto('/admin/invites');
    await page.getByLabel('For email (optional)').fill('phone@walk.test');
    await page.getByRole('button', { name: 'Create invite' }).click();
    await page.getByRole('heading', { name: 'New invite for phone@walk.test' }).waitFor();
    const invitesRow = page.locator('table tbody tr').first();
    expect(await invitesRow.evaluate((el) => getComputedStyle(el).display)).toBe('block');
    await page.goto('/admin/providers');
    await page.getByRole('row', { name: /prov-gpt-oss-120b/ }).waitFor();
    for (const name of await page.locator('tbody strong').all()) {
      const lines = await name.evaluate((el) => {
        const r = el.getBoundingClientRect();
        return r.height / Number.parseFloat(getComputedStyle(el).fontSize);
      });
      expect(lines, await name.innerText()).toBeLessThan(2);
    }
    await context.close();

    const { context: userContext, page: userPage } = await newPage(390);
    await logIn(userPage, user.email);
    const creditRow = userPage.locator('table tbody tr').first();
    await creditRow.waitFor();
    expect(await creditRow.evaluate((el) => getComputedStyle(el).display)).toBe('block');
    await userContext.close();
  });

  it('8: focus lands on what comes next, and changes are announced', async () => {
    const user = await createUser(h, { usd: 1 });
    const { context, page } = await newPage();
    await logIn(page, user.email);
    await page.getByRole('link', { name: 'API keys', exact: true }).click();
    expect(await activeElement(page)).toMatchObject({ tag: 'H1', text: 'API keys' });
    await page.waitForFunction(() => document.getElementById('announcer')?.textContent === 'API keys page');

    await page.getByLabel('Name').fill('focus key');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByTestId('new-key').waitFor();
    expect((await activeElement(page)).text).toContain('Your new key “focus key”');
    await page.waitForFunction(() => document.getElementById('announcer')?.textContent?.includes('created'));

    await page.getByRole('button', { name: 'I have copied the key' }).click();
    await page.getByRole('heading', { name: 'Your keys' }).waitFor();
    expect(await activeElement(page)).toMatchObject({ tag: 'H2', id: 'keys-heading' });

    await page.getByRole('button', { name: 'Revoke key focus key' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke key' }).click();
    await page.getByRole('main').getByText('Key “focus key” was revoked').waitFor();
    expect((await activeElement(page)).text).toContain('was revoked');
    await page.waitForFunction(() => document.getElementById('announcer')?.textContent?.includes('revoked'));
    await context.close();
  });

  it('9 and 10: the grant dialog speaks plainly, keeps its buttons in one row and echoes exact figures', async () => {
    const user = await createUser(h);
    const { context, page } = await newPage();
    await logIn(page, admin.email);
    await page.goto('/admin/accounts');
    await page.getByLabel('Search by email').fill(user.email);
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('button', { name: `Grant credit to ${user.email}` }).click();
    const dialog = page.getByRole('dialog', { name: 'Grant credit' });
    const [cancel, add] = [
      await dialog.getByRole('button', { name: 'Cancel' }).boundingBox(),
      await dialog.getByRole('button', { name: 'Add credit' }).boundingBox(),
    ];
    expect(cancel?.y).toBe(add?.y);

    await dialog.getByLabel('Amount (USD)').fill('12,50');
    await dialog.getByLabel('Note').fill('   ');
    await dialog.getByRole('button', { name: 'Add credit' }).click();
    await dialog.getByText('Enter the amount as a number of dollars').waitFor();
    await dialog.getByLabel('Amount (USD)').fill('999999.123456789');
    expect(await dialog.getByRole('alert').count()).toBe(0);
    await dialog.getByRole('button', { name: 'Add credit' }).click();
    await dialog.getByText('Write a note for the ledger').waitFor();
    expect(await dialog.getByText('is required').count()).toBe(0);
    await dialog.getByLabel('Note').fill('big grant');
    await dialog.getByRole('button', { name: 'Add credit' }).click();
    await page
      .getByRole('main')
      .getByText(`Added $999,999.123456789 to ${user.email}; the balance is now $999,999.123456789.`)
      .waitFor();
    await context.close();
  });

  it('10: invites: confirmation to withdraw, who used one and when, an email in its link, 1–90 days', async () => {
    const { context, page } = await newPage();
    await logIn(page, admin.email);
    await page.goto('/admin/invites');
    await page.getByLabel('For email (optional)').fill('invited@walk.test');
    await page.getByLabel('Valid for (days)').fill('90');
    await page.getByRole('button', { name: 'Create invite' }).click();
    const link = await page.getByTestId('invite-link').innerText();
    const code = new URL(link).searchParams.get('invite');
    expect(new URL(link).searchParams.get('email')).toBe('invited@walk.test');
    const invites = (await apiGet(page, '/admin/invites')) as { data: { expires_at: string }[] };
    const expires = Date.parse(invites.data[0]?.expires_at ?? '');
    expect(Math.round((expires - Date.now()) / 86_400_000)).toBe(90);

    // The link fills in the email.
    const { context: visitor, page: signup } = await newPage();
    await signup.goto(link.replace(url, ''));
    expect(await signup.getByLabel('Email').inputValue()).toBe('invited@walk.test');
    await visitor.close();

    // Used (as a sign-up in invite mode does): the list says by whom and when.
    const used = await h.server.store.dashboard().signUp({
      email: 'invited@walk.test',
      passwordHash: await hashPassword(PASSWORD),
      inviteCodeHash: inviteCodeHash(code ?? ''),
    });
    expect(used.ok).toBe(true);
    await page.getByLabel('Valid for (days)').fill('1');
    await page.getByRole('button', { name: 'Create invite' }).click();
    await page.getByRole('row', { name: /by invited@walk\.test, .* UTC/ }).waitFor();

    // Withdrawing asks first.
    await page
      .getByRole('button', { name: /^Withdraw the invite for anyone/ })
      .first()
      .click();
    const dialog = page.getByRole('dialog', { name: 'Withdraw this invite?' });
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    expect(await page.getByText('withdrawn', { exact: true }).count()).toBe(0);
    await page
      .getByRole('button', { name: /^Withdraw the invite for anyone/ })
      .first()
      .click();
    await dialog.getByRole('button', { name: 'Withdraw invite' }).click();
    await page.getByText('withdrawn', { exact: true }).first().waitFor();
    await context.close();
  });

  it('11: empty search, a disabled account told why, one money format, the chart axis, the Amount header', async () => {
    const user = await createUser(h, { usd: 4.994042 });
    const key = await newKey(user.id, 'money key');
    expect((await h.chat(key)).status).toBe(200);
    const { context, page } = await newPage();
    await logIn(page, user.email);

    // Money: six decimals everywhere on the overview, once it has loaded.
    await page.waitForFunction(
      () => (document.querySelector('main')?.innerText.match(/\$[\d,.]+/g) ?? []).length > 2,
    );
    const amounts = (await page.locator('main').innerText()).match(/\$[\d,.]+/g) ?? [];
    expect(amounts.length).toBeGreaterThan(2);
    for (const a of amounts) expect(a).toMatch(/^\$\d{1,3}(,\d{3})*\.\d{6}$/);
    const amountHeader = page.getByRole('columnheader', { name: 'Amount' });
    expect(await amountHeader.evaluate((el) => getComputedStyle(el).textAlign)).toBe('right');

    // The chart's last label is its last day, today (UTC).
    await page.goto('/usage');
    await page.locator('svg text.axis').first().waitFor();
    const labels = await page.locator('svg text.axis').allTextContents();
    const daily = (await apiGet(page, '/usage/daily?days=30')) as { days: { date: string }[] };
    const last = daily.days.at(-1)?.date ?? '';
    const lastLabel = new Date(`${last}T00:00:00Z`).toLocaleDateString('en-US', {
      month: 'short',
      day: 'numeric',
      timeZone: 'UTC',
    });
    expect([lastLabel, last.slice(5)]).toContain(labels.at(-1));

    // The admin: an empty search says so; disabling the user ends their dashboard with a reason.
    const { context: adminContext, page: adminPage } = await newPage();
    await logIn(adminPage, admin.email);
    await adminPage.goto('/admin/accounts');
    await adminPage.getByLabel('Search by email').fill('nobody-at-all');
    await adminPage.getByRole('button', { name: 'Search' }).click();
    await adminPage.getByText('No account’s email contains “nobody-at-all”.').waitFor();
    await adminPage.getByLabel('Search by email').fill(user.email);
    await adminPage.getByRole('button', { name: 'Search' }).click();
    await adminPage.getByRole('button', { name: `Disable ${user.email}` }).click();
    await adminPage.getByRole('button', { name: 'Disable account' }).click();
    await adminPage.getByRole('main').getByText(`${user.email} is disabled`).waitFor();
    await adminContext.close();

    await page.getByRole('link', { name: 'API keys', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Log in' }).waitFor();
    await page.getByRole('main').getByText('an administrator disabled the account').waitFor();
    await context.close();
  });

  it('12: a row of refused requests says how many it stands for', async () => {
    const user = await createUser(h);
    const key = await newKey(user.id, 'broke key');
    for (let i = 0; i < 10; i++) expect((await h.chat(key)).status).toBe(402);
    const { context, page } = await newPage();
    await logIn(page, user.email);
    await page.goto('/usage');
    const row = page.getByRole('row', { name: /broke key/ });
    await row.waitFor();
    expect(await row.innerText()).toContain('10 requests refused in this minute');
    await context.close();
  });

  it('13: the code examples, which scroll sideways on a phone, take keyboard focus', async () => {
    const user = await createUser(h, { usd: 1 });
    const { context, page } = await newPage(390);
    await logIn(page, user.email);
    const blocks = page.locator('pre');
    expect(await blocks.count()).toBe(2);
    for (const pre of await blocks.all()) {
      expect(await pre.evaluate((el) => el.scrollWidth > el.clientWidth)).toBe(true);
      await pre.focus();
      expect(await pre.evaluate((el) => document.activeElement === el)).toBe(true);
    }
    await context.close();
  });
});
