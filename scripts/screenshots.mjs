#!/usr/bin/env node
/**
 * Regenerates docs/screenshots/*.png: every dashboard page at desktop (1280×800) and phone (390×844)
 * width, light theme, and the main pages in the dark theme too (`*-dark-<size>.png`). Runs the built server (`npm run build` first) on a throwaway SQLite database with
 * the upstream simulator, seeds two accounts, keys and 14 days of billed usage, and drives Debian's
 * headless Chromium with playwright-core.
 *
 *   npm run build && node scripts/screenshots.mjs
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { chromium } from 'playwright-core';

const ROOT = join(import.meta.dirname, '..');
const OUT = join(ROOT, 'docs', 'screenshots');
const CHROMIUM = '/usr/bin/chromium';
const PASSWORD = 'correct horse battery staple';
const DAY = 86_400_000;

for (const [path, fix] of [
  [join(ROOT, 'dist', 'http', 'server.js'), 'npm run build'],
  [join(ROOT, 'web', 'dist', 'index.html'), 'npm run build'],
  [CHROMIUM, 'apt-get install -y chromium'],
]) {
  if (!existsSync(path)) {
    console.error(`screenshots: ${path} is missing (${fix})`);
    process.exit(1);
  }
}

const { loadConfig } = await import('../dist/config/index.js');
const { createServer } = await import('../dist/http/server.js');
const { startSimulator } = await import('../dist/simulator/index.js');
const { CATALOG, envNameOf } = await import('../dist/providers/catalog.js');
const { openStore } = await import('../dist/store/index.js');
const { hashPassword } = await import('../dist/auth/passwords.js');
const { createKey } = await import('../dist/auth/keys.js');
const { parseUsdToNano, tokenCost } = await import('../dist/money/money.js');
const { createTopUpBatch } = await import('../dist/auth/topup-code.js');
const { redeemTopUpCode } = await import('../dist/auth/code-redemption.js');

const dir = mkdtempSync(join(tmpdir(), 'tollgate-screens-'));
const sim = await startSimulator({ host: '127.0.0.1', port: 0, latencyMs: 0 });
const env = {
  DATABASE_URL: `sqlite:${join(dir, 'screens.db')}`,
  PORT: '0',
  HOST: '127.0.0.1',
  LOG_LEVEL: 'silent',
  SIGNUP: 'invite',
  PROV_MISTRAL_ENABLED: 'false',
};
for (const entry of CATALOG) {
  const n = envNameOf(entry.name);
  env[`PROV_${n}_BASE_URL`] = sim.baseUrl(entry.wireFormat, entry.name.replace(/^prov-/, ''));
  // prov-claude stays unconfigured, so the providers page shows an inactive provider and why.
  if (entry.name !== 'prov-claude') env[`PROV_${n}_API_KEY`] = `simulator-${randomBytes(6).toString('hex')}`;
}
const config = loadConfig(env);
const store = await openStore(config.databaseUrl, { sqliteSynchronous: 'NORMAL' });
const server = await createServer(config, { store, logger: pino({ level: 'silent' }) });
const url = await server.listen();

async function account(email, role, usd) {
  const created = await store.createAccount({ email, role, passwordHash: await hashPassword(PASSWORD) });
  if (!created.ok) throw new Error(`cannot create ${email}`);
  if (usd)
    await store.addCredit({
      accountId: created.account.id,
      amountNano: parseUsdToNano(usd),
      note: 'Invoice 2024-117',
    });
  return created.account;
}

const admin = await account('ops@example.com', 'admin', undefined);
const ada = await account('ada@example.com', 'user', '25');
await account('grace@example.com', 'user', '10');
await account('linus@example.com', 'user', '3.5');
const keys = [];
for (const name of ['laptop', 'billing-service', 'ci']) {
  const k = await createKey(store, ada.id, name);
  if (!k.ok) throw new Error(k.message);
  keys.push(k);
}

// A batch of top-up codes, two redeemed (one by Ada, one left for the Top up page's shot).
const batch = await createTopUpBatch(store, {
  amountNano: parseUsdToNano('10'),
  count: 20,
  expiresAt: null,
  note: 'Workshop, March',
  createdBy: admin.id,
});
await redeemTopUpCode(store, ada.id, batch.codes[0]);

// 14 days of history, billed through the store's own hold → settle path so the ledger stays exact.
const providers = ['prov-deepseek', 'prov-qwen', 'prov-kimi', 'prov-gpt-oss-120b', 'prov-gemini'];
let seed = 7;
const rand = (n) => {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return seed % n;
};
const today = Math.floor(Date.now() / DAY) * DAY;
for (let d = 13; d >= 1; d--) {
  const requests = 3 + rand(9);
  for (let i = 0; i < requests; i++) {
    const provider = providers[rand(providers.length)];
    const p = config.providers[provider];
    const promptTokens = 200 + rand(4000);
    const completionTokens = 50 + rand(1500);
    const input = tokenCost(promptTokens, p.inputPriceNano);
    const output = tokenCost(completionTokens, p.outputPriceNano);
    const createdAt = today - d * DAY + 9 * 3_600_000 + i * 1_800_000;
    const requestId = `chatcmpl-${randomBytes(12).toString('hex')}`;
    const holdId = `hold_${randomBytes(12).toString('hex')}`;
    const key = keys[rand(keys.length)];
    await store.placeHold({
      holdId,
      accountId: ada.id,
      requestId,
      amountNano: input + output,
      owner: server.instanceId,
      createdAt,
      expiresAt: Date.now() + 60_000,
    });
    await store.settle({
      holdId,
      accountId: ada.id,
      costNano: input + output,
      usage: {
        requestId,
        accountId: ada.id,
        keyId: key.key.id,
        provider,
        model: p.model,
        promptTokens,
        completionTokens,
        usageEstimated: false,
        inputCostNano: input,
        outputCostNano: output,
        status: 'ok',
        errorCode: null,
        httpStatus: 200,
        durationMs: 400 + rand(2500),
        clientGone: false,
        createdAt,
      },
    });
  }
}

// Today: real calls through the API, one of them failing upstream.
async function chat(key, body) {
  await fetch(`${url}/api/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}
for (let i = 0; i < 6; i++) {
  await chat(keys[i % 2].secret, { messages: [{ role: 'user', content: `Summarise chapter ${i + 1}` }] });
}
sim.setFault('kimi', { kind: 'status', status: 503, times: 1 });
await chat(keys[2].secret, {
  provider: 'prov-kimi',
  messages: [{ role: 'user', content: 'Translate this' }],
});
await chat(keys[2].secret, {
  provider: 'prov-gemini',
  messages: [{ role: 'user', content: 'Classify this' }],
});

// The CI key: $5 a month, two providers, 60 requests a minute, until the end of the year.
await store.updateApiKey(ada.id, keys[2].key.id, {
  limitNano: parseUsdToNano('5'),
  limitReset: 'monthly',
  allowed: ['prov-deepseek', 'prov-qwen'],
  rpm: 60,
  expiresAt: Date.UTC(new Date().getUTCFullYear(), 11, 31, 23, 59),
});
await chat(keys[2].secret, { messages: [{ role: 'user', content: 'Lint this diff' }] });

const VIEWPORTS = { desktop: { width: 1280, height: 800 }, phone: { width: 390, height: 844 } };
mkdirSync(OUT, { recursive: true });
// The set of pages is exactly what this run writes: drop the last run's files first.
for (const f of readdirSync(OUT)) if (f.endsWith('.png')) rmSync(join(OUT, f));
const browser = await chromium.launch({
  executablePath: CHROMIUM,
  headless: true,
  args: [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--no-first-run',
  ],
});
const written = [];

async function shoot(page, name, size) {
  await page.waitForLoadState('networkidle');
  await page.evaluate(() => document.fonts.ready);
  const file = join(OUT, `${name}-${size}.png`);
  await page.screenshot({ path: file, fullPage: true });
  written.push(file);
}

async function logIn(page, email) {
  await page.goto('/login');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
}

try {
  for (const [size, viewport] of Object.entries(VIEWPORTS)) {
    const context = await browser.newContext({
      viewport,
      baseURL: url,
      colorScheme: 'light',
      deviceScaleFactor: 1,
    });
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    await page.goto('/login');
    await page.getByRole('heading', { name: 'Log in' }).waitFor();
    await shoot(page, 'login', size);
    await page.goto('/signup');
    await page.getByRole('heading', { name: 'Create your account' }).waitFor();
    await shoot(page, 'signup', size);

    await logIn(page, ada.email);
    await page.getByTestId('balance').waitFor();
    await shoot(page, 'overview', size);
    await page.goto('/keys');
    await page.getByRole('heading', { name: 'Your keys' }).waitFor();
    await shoot(page, 'keys', size);
    await page.getByLabel('Name').fill(`staging (${size})`);
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByTestId('new-key').waitFor();
    await shoot(page, 'keys-created', size);
    await page.getByRole('button', { name: 'I have copied the key' }).click();
    await page.getByRole('button', { name: 'Revoke key ci' }).click();
    await page.getByRole('dialog').waitFor();
    await shoot(page, 'keys-revoke', size);
    await page.getByRole('button', { name: 'Cancel' }).click();
    await page.getByRole('button', { name: 'Edit key ci' }).click();
    await page.getByRole('dialog').getByLabel('Tokens per minute').fill('200000');
    await shoot(page, 'keys-limits', size);
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
    await page.goto('/models');
    await page.getByRole('row', { name: /prov-deepseek/ }).waitFor();
    await shoot(page, 'models', size);
    await page.goto('/top-up');
    await page.getByLabel('Code', { exact: true }).fill(batch.codes[size === 'desktop' ? 1 : 2]);
    await page.getByRole('button', { name: 'Redeem' }).click();
    await page
      .locator('#main')
      .getByText(/^Added \$10/)
      .waitFor();
    await shoot(page, 'top-up', size);
    await page.goto('/usage');
    await page.getByRole('img', { name: /per day by provider/ }).waitFor();
    await page.getByRole('table').last().waitFor();
    await shoot(page, 'usage', size);
    await page.goto('/account');
    await page.getByRole('heading', { name: 'Change password' }).waitFor();
    await shoot(page, 'account', size);
    await page.getByRole('button', { name: 'Log out', exact: true }).click();

    await logIn(page, admin.email);
    await page.goto('/admin/accounts');
    await page.getByText(ada.email, { exact: true }).first().waitFor();
    await shoot(page, 'admin-accounts', size);
    await page.getByRole('button', { name: `Grant credit to ${ada.email}` }).click();
    await page.getByLabel('Amount (USD)').fill('50');
    await page.getByLabel('Note').fill('Invoice 2024-131');
    await shoot(page, 'admin-grant-credit', size);
    await page.getByRole('button', { name: 'Cancel' }).click();
    await page.goto('/admin/invites');
    await page.getByLabel('For email (optional)').fill(`new.colleague.${size}@example.com`);
    await page.getByLabel('Note (optional)').fill('Data team');
    await page.getByRole('button', { name: 'Create invite' }).click();
    await page.getByRole('heading', { name: 'New invite' }).waitFor();
    await shoot(page, 'admin-invites', size);
    await page.goto('/admin/providers');
    await page.getByRole('row', { name: /prov-claude/ }).waitFor();
    await shoot(page, 'admin-providers', size);
    await page.goto('/admin/codes');
    await page.getByLabel('Amount of each code (USD)').fill('25');
    await page.getByLabel('How many codes').fill('5');
    await page.getByLabel('Note (optional)').fill('Hackathon prizes');
    await page.getByRole('button', { name: 'Create codes' }).click();
    await page.getByTestId('new-codes').waitFor();
    await shoot(page, 'admin-codes', size);
    await context.close();
  }

  // The dark theme, as a browser set to dark shows it.
  for (const [size, viewport] of Object.entries(VIEWPORTS)) {
    const context = await browser.newContext({
      viewport,
      baseURL: url,
      colorScheme: 'dark',
      deviceScaleFactor: 1,
    });
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    await logIn(page, ada.email);
    await page.getByTestId('balance').waitFor();
    await shoot(page, 'overview-dark', size);
    await page.goto('/keys');
    await page.getByRole('heading', { name: 'Your keys' }).waitFor();
    await shoot(page, 'keys-dark', size);
    await page.goto('/usage');
    await page.getByRole('img', { name: /per day by provider/ }).waitFor();
    await shoot(page, 'usage-dark', size);
    await page.goto('/models');
    await page.getByRole('row', { name: /prov-deepseek/ }).waitFor();
    await shoot(page, 'models-dark', size);
    await context.close();
  }
} finally {
  await browser.close();
  await server.close();
  await store.close();
  await sim.close();
  rmSync(dir, { recursive: true, force: true });
}
console.log(`wrote ${written.length} screenshots to ${OUT}`);
