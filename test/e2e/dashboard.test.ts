import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../../src/auth/keys.js';
import { createUser, type Harness, PASSWORD, startDashboardHarness } from '../dashboard/dashboard-helpers.js';
import { browserTestsCanRun, launchChromium } from './browser.js';

const canRun = browserTestsCanRun();

let h: Harness;
let url: string;
let browser: Browser;
let admin: { id: string; email: string };

beforeAll(async () => {
  if (!canRun) return;
  h = await startDashboardHarness({ env: { SIGNUP: 'open' } });
  url = await h.server.listen();
  admin = await createUser(h, { role: 'admin', email: 'root@e2e.test' });
  browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await h?.close();
});

/** Errors the dashboard's pages logged (script errors, Content-Security-Policy violations, …). */
const pageErrors: string[] = [];
afterEach(() => {
  const errors = pageErrors.splice(0);
  expect(errors).toEqual([]);
});

function watch(page: Page): Page {
  page.setDefaultTimeout(10_000);
  page.on('pageerror', (err) => pageErrors.push(`${page.url()}: ${err.message}`));
  page.on('console', (msg) => {
    // A failed request shows as a console error too; the tests cause 401s and 409s on purpose.
    if (msg.type() === 'error' && !/status of (401|403|409|429)/.test(msg.text())) {
      pageErrors.push(`${page.url()}: ${msg.text()}`);
    }
  });
  return page;
}

async function newPage(width = 1280, height = 800): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width, height }, baseURL: url });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: url });
  context.on('page', watch);
  const page = await context.newPage();
  return { context, page };
}

async function logIn(page: Page, email: string, password = PASSWORD): Promise<void> {
  await page.goto('/login');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
}

async function chat(key: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${url}/api/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'Hello from the browser test' }] }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** The dollar amount the overview shows as the balance. */
async function shownBalance(page: Page): Promise<number> {
  const text = await page.getByTestId('balance').innerText();
  return Number(text.replace(/[$,]/g, ''));
}

async function createKeyInUi(page: Page, name: string): Promise<string> {
  await page.getByLabel('Name').fill(name);
  await page.getByRole('button', { name: 'Create key' }).click();
  const key = await page.getByTestId('new-key').innerText();
  await page.getByRole('button', { name: 'I have copied the key' }).click();
  return key;
}

describe.skipIf(!canRun)('dashboard in a real browser (headless Chromium)', () => {
  it('sign up, get credit from an admin, create a key and read it once, call the API, see the request and the lower balance, revoke the key and see 401 within a second', async () => {
    const email = `new-user-${Date.now()}@e2e.test`;
    const { context, page } = await newPage();

    // Sign up.
    await page.goto('/');
    await page.getByRole('link', { name: 'Sign up', exact: true }).click();
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    expect(await shownBalance(page)).toBe(0);

    // An admin grants credit with a note; the user sees both.
    const { context: adminContext, page: adminPage } = await newPage();
    await logIn(adminPage, admin.email);
    await adminPage.getByRole('link', { name: 'Accounts', exact: true }).click();
    await adminPage.getByLabel('Search by email').fill(email);
    await adminPage.getByRole('button', { name: 'Search' }).click();
    await adminPage.getByRole('button', { name: `Grant credit to ${email}` }).click();
    await adminPage.getByLabel('Amount (USD)').fill('5');
    await adminPage.getByLabel('Note').fill('welcome credit');
    await adminPage.getByRole('button', { name: 'Add credit' }).click();
    await adminPage
      .getByRole('main')
      .getByText(`Added $5.000000 to ${email}; the balance is now $5.000000.`)
      .waitFor();
    await adminContext.close();

    await page.reload();
    await page.getByText('welcome credit').waitFor();
    expect(await shownBalance(page)).toBe(5);

    // Create a key: shown once, with a copy button and the snippets filled in.
    await page.getByRole('link', { name: 'API keys', exact: true }).click();
    await page.getByLabel('Name').fill('e2e laptop');
    await page.getByRole('button', { name: 'Create key' }).click();
    const key = await page.getByTestId('new-key').innerText();
    expect(key).toMatch(/^sk-svc-[0-9a-f]{32}$/);
    await page.getByText('You will not see it again').waitFor();
    await page.getByRole('button', { name: 'Copy key', exact: true }).click();
    await page.getByRole('button', { name: 'Copied', exact: true }).waitFor();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(key);
    const curl = await page.locator('figure', { hasText: 'curl' }).locator('code').innerText();
    expect(curl).toContain(`Authorization: Bearer ${key}`);
    expect(curl).toContain(`${url}/api/v1/chat/completions`);
    const sdk = await page.locator('figure', { hasText: 'OpenAI SDK' }).locator('code').innerText();
    expect(sdk).toContain(`apiKey: '${key}'`);
    expect(sdk).toContain(`baseURL: '${url}/api/v1'`);
    await page.getByRole('button', { name: 'I have copied the key' }).click();
    expect(await page.content()).not.toContain(key);
    await page.reload();
    await page.getByRole('cell', { name: 'e2e laptop', exact: true }).waitFor();
    expect(await page.content()).not.toContain(key);
    await expect(
      page.getByRole('cell', { name: `${key.slice(0, 11)}…${key.slice(-4)}`, exact: true }).count(),
    ).resolves.toBe(1);

    // Call the API with it; the request and the lower balance appear.
    const call = await chat(key);
    expect(call.status).toBe(200);
    const meta = call.body.meta as { provider: string; balance: number };
    await page.getByRole('link', { name: 'Usage', exact: true }).click();
    const row = page.getByRole('row', { name: new RegExp(`e2e laptop.*${meta.provider}`) });
    await row.waitFor();
    expect(await row.innerText()).toMatch(/OK/);
    await page.getByRole('link', { name: 'Overview', exact: true }).click();
    await page.getByTestId('balance').waitFor();
    const balance = await shownBalance(page);
    expect(balance).toBeLessThan(5);
    expect(balance).toBeCloseTo(meta.balance, 6);

    // Revoke with confirmation; the API refuses the key within a second.
    await page.getByRole('link', { name: 'API keys', exact: true }).click();
    await page.getByRole('button', { name: 'Revoke key e2e laptop' }).click();
    const dialog = page.getByRole('dialog', { name: 'Revoke this key?' });
    await dialog.waitFor();
    const revoked = page.waitForResponse((r) => r.request().method() === 'DELETE' && r.status() === 200);
    await dialog.getByRole('button', { name: 'Revoke key' }).click();
    await revoked;
    const revokedAt = Date.now();
    let after = await chat(key);
    while (after.status !== 401 && Date.now() - revokedAt < 1000) after = await chat(key);
    expect(Date.now() - revokedAt).toBeLessThan(1000);
    expect(after.status).toBe(401);
    expect(after.body).toEqual({
      error: { message: 'Invalid API key', type: 'authentication_error', code: 'invalid_api_key' },
    });
    await page.getByRole('main').getByText('Key “e2e laptop” was revoked').waitFor();
    await page.getByRole('cell', { name: 'Revoked', exact: true }).waitFor();
    await context.close();
  });

  it('hits the 10-key limit with a clear message, also when two tabs create the 10th key at once', async () => {
    const user = await createUser(h, { usd: 1 });
    const { context, page } = await newPage();
    await logIn(page, user.email);
    await page.goto('/keys');
    for (let i = 1; i <= 9; i++) await createKeyInUi(page, `key ${i}`);
    await page.getByText('9 of 10').waitFor();

    // Two tabs, both showing 9 keys, create at the same moment: one wins, the other is told why.
    const second = await context.newPage();
    await second.goto('/keys');
    await second.getByText('9 of 10').waitFor();
    await page.getByLabel('Name').fill('tab one');
    await second.getByLabel('Name').fill('tab two');
    await Promise.all([
      page.getByRole('button', { name: 'Create key' }).click(),
      second.getByRole('button', { name: 'Create key' }).click(),
    ]);
    const refusal = 'An account can have at most 10 API keys; revoke one before creating another.';
    const outcomes = await Promise.all(
      [page, second].map((p) =>
        Promise.race([
          p
            .getByTestId('new-key')
            .waitFor()
            .then(() => 'created'),
          p
            .getByText(refusal)
            .waitFor()
            .then(() => 'refused'),
        ]),
      ),
    );
    expect(outcomes.sort()).toEqual(['created', 'refused']);
    expect((await h.server.store.listApiKeys(user.id)).filter((k) => k.revokedAt === null)).toHaveLength(10);

    // Now the form itself says so.
    await second.reload();
    await second.getByText('You have 10 active keys, the most an account may have.').waitFor();
    expect(await second.getByLabel('Name').isDisabled()).toBe(true);
    await context.close();
  });

  it('an admin sees the providers page with states, prices and error rates', async () => {
    const { context, page } = await newPage();
    await logIn(page, admin.email);
    await page.getByRole('link', { name: 'Providers', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Providers' }).waitFor();
    const row = page.getByRole('row', { name: /prov-claude/ });
    expect(await row.innerText()).toMatch(/Active/);
    expect(await page.getByRole('row').count()).toBe(9);
    await context.close();
  });

  it('works on a phone-sized screen: no sideways scrolling, navigation reachable', async () => {
    const user = await createUser(h, { usd: 2 });
    // Tables with rows in them: the widest content the pages show.
    const key = await createKey(h.server.store, user.id, 'a rather long key name for a phone');
    if (!key.ok) throw new Error(key.message);
    expect((await chat(key.secret)).status).toBe(200);
    const { context, page } = await newPage(390, 844);
    await logIn(page, user.email);
    for (const path of ['/', '/keys', '/usage', '/account']) {
      await page.goto(path);
      await page.getByRole('heading', { level: 1 }).waitFor();
      const overflow = await page.evaluate('document.documentElement.scrollWidth - window.innerWidth');
      expect(overflow, path).toBeLessThanOrEqual(0);
    }
    await page
      .getByRole('navigation', { name: 'Dashboard' })
      .getByRole('link', { name: 'API keys', exact: true })
      .click();
    await page.getByRole('heading', { level: 1, name: 'API keys' }).waitFor();
    await context.close();

    const { context: adminContext, page: adminPage } = await newPage(390, 844);
    await logIn(adminPage, admin.email);
    for (const path of ['/admin/accounts', '/admin/invites', '/admin/providers']) {
      await adminPage.goto(path);
      await adminPage.getByRole('heading', { level: 1 }).waitFor();
      await adminPage.waitForLoadState('networkidle');
      const overflow = await adminPage.evaluate('document.documentElement.scrollWidth - window.innerWidth');
      expect(overflow, path).toBeLessThanOrEqual(0);
    }
    await adminContext.close();
  });

  it('can be used with the keyboard alone', async () => {
    const user = await createUser(h, { usd: 1 });
    const { context, page } = await newPage();
    await page.goto('/login');
    await page.getByLabel('Email').focus();
    await page.keyboard.type(user.email);
    await page.keyboard.press('Tab');
    await page.keyboard.type(PASSWORD);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    await page.goto('/keys');
    await page.getByLabel('Name').focus();
    await page.keyboard.type('keyboard key');
    await page.keyboard.press('Enter');
    await page.getByTestId('new-key').waitFor();
    await context.close();
  });

  it("another site's page cannot create a key in a logged-in user's name", async () => {
    const user = await createUser(h, { usd: 1 });
    const { context, page } = await newPage();
    await logIn(page, user.email);
    // The attacker's page is served from another origin and tries a form post and a fetch.
    const target = `${url}/dashboard/api/keys`;
    const attacker: HttpServer = createHttpServer((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end(`<!doctype html><body>
        <form id="f" method="POST" action="${target}" enctype="text/plain">
          <input name='{"name":"planted","x":"' value='"}'></form>
        <script>
          fetch(${JSON.stringify(target)}, { method: 'POST', credentials: 'include', mode: 'no-cors',
            headers: { 'content-type': 'text/plain' }, body: JSON.stringify({ name: 'planted by fetch' }) })
            .finally(() => document.getElementById('f').submit());
        </script></body>`);
    });
    await new Promise<void>((resolve) => attacker.listen(0, 'localhost', resolve));
    try {
      const evil = await context.newPage();
      const port = (attacker.address() as AddressInfo).port;
      await evil.goto(`http://localhost:${port}/`);
      await evil.waitForURL(/dashboard\/api\/keys/);
      const body = await evil.locator('body').innerText();
      expect(body).toMatch(/"code":"(not_authenticated|csrf_failed|unsupported_media_type)"/);
    } finally {
      attacker.close();
    }
    expect(await h.server.store.listApiKeys(user.id)).toEqual([]);
    await context.close();
  });
});
