/// <reference lib="dom" />
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../../src/auth/keys.js';
import {
  createUser,
  DashboardClient,
  type Harness,
  startDashboardHarness,
} from '../dashboard/dashboard-helpers.js';
import { browserTestsCanRun, launchChromium } from './browser.js';
import { ROUTES, type RouteCheck } from './routes.js';
import { logIn, Sessions } from './session.js';

/**
 * axe-core on every page of the dashboard (routes.ts), in both themes and at desktop and phone width: no
 * serious or critical violation, and each color-contrast check axe leaves undecided ("incomplete") is
 * decided here from the computed colors. One browser; one page per theme and width, reused.
 */
const canRun = browserTestsCanRun();
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const THEMES = ['light', 'dark'] as const;
const WIDTHS = [1280, 390] as const;
const TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice'];

let h: Harness;
let url: string;
let browser: Browser;
let admin: { id: string; email: string };
const sessions = new Sessions(
  () => browser,
  () => url,
);

/** An admin with what every page shows: credit, keys (one with limits), usage, a redeemed code, an invite. */
async function seed(): Promise<void> {
  admin = await createUser(h, { role: 'admin', usd: 20, email: 'axe-admin@example.test' });
  const c = new DashboardClient(h);
  await c.login(admin.email);
  const laptop = await createKey(h.server.store, admin.id, 'laptop');
  const ci = await createKey(h.server.store, admin.id, 'ci runner');
  if (!laptop.ok || !ci.ok) throw new Error('cannot create keys');
  await c.request('PATCH', `/keys/${ci.key.id}`, {
    limit: '5',
    limit_reset: 'monthly',
    allowed: ['prov-deepseek', 'prov-qwen'],
    rpm: 60,
    expires_at: '2099-01-01T00:00:00Z',
  });
  for (const key of [laptop.secret, ci.secret, laptop.secret]) expect((await h.chat(key)).status).toBe(200);
  const batch = await c.post('/admin/code-batches', { amount: '5', count: 3, note: 'launch giveaway' });
  expect(batch.status).toBe(201);
  expect((await c.post('/credits/redeem', { code: (batch.body.codes as string[])[0] })).status).toBe(200);
  expect((await c.post('/admin/invites', { email: 'new@example.test', note: 'team' })).status).toBe(201);
}

beforeAll(async () => {
  if (!canRun) return;
  h = await startDashboardHarness({ env: { SIGNUP: 'open' } });
  url = await h.server.listen();
  await seed();
  browser = await launchChromium();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await h?.close();
});
afterEach(() => sessions.checkErrors());

interface AxeNode {
  target: string[];
  failureSummary?: string;
  any: { id: string; message: string; data: unknown }[];
}
interface AxeResult {
  id: string;
  impact: string | null;
  help: string;
  nodes: AxeNode[];
}

/** A contrast axe could not decide, decided from the computed colors of the text and what is behind it. */
interface Decided {
  target: string;
  ratio: number;
  required: number;
  why: string;
}

/** Decides each target's contrast in the page: its text color against the composed backgrounds behind it. */
function decideContrast(page: Page, targets: { target: string; why: string }[]): Promise<Decided[]> {
  return page.evaluate((list) => {
    const parse = (c: string): [number, number, number, number] => {
      const m = /rgba?\(([\d.]+)[ ,]+([\d.]+)[ ,]+([\d.]+)(?:[ ,/]+([\d.]+))?\)/.exec(c);
      if (!m) throw new Error(`unparsed color ${c}`);
      return [Number(m[1]), Number(m[2]), Number(m[3]), m[4] === undefined ? 1 : Number(m[4])];
    };
    const over = (top: number[], under: number[]) =>
      [0, 1, 2].map((i) => (top[i] ?? 0) * (top[3] ?? 1) + (under[i] ?? 0) * (1 - (top[3] ?? 1)));
    const luminance = (rgb: number[]) => {
      const [r, g, b] = rgb.map((v) => {
        const s = v / 255;
        return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
      });
      return 0.2126 * (r ?? 0) + 0.7152 * (g ?? 0) + 0.0722 * (b ?? 0);
    };
    return list.map(({ target, why }) => {
      const el = document.querySelector(target);
      if (!el) throw new Error(`no element ${target}`);
      // The backgrounds from the element up to the page, composed from the bottom.
      const layers: number[][] = [];
      for (let e: Element | null = el; e; e = e.parentElement) {
        const bg = parse(getComputedStyle(e).backgroundColor);
        if (bg[3] > 0) layers.push(bg);
        if (bg[3] === 1) break;
      }
      let behind = [255, 255, 255];
      for (const layer of layers.reverse()) behind = over(layer, behind);
      const style = getComputedStyle(el);
      const text = over(parse(style.color), behind);
      const [a, b] = [luminance(text), luminance(behind)].sort((x, y) => y - x);
      const size = Number.parseFloat(style.fontSize);
      const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
      return { target, ratio: ((a ?? 0) + 0.05) / ((b ?? 0) + 0.05), required: large ? 3 : 4.5, why };
    });
  }, targets);
}

/**
 * Opens the route: in the app, as its links do (no reload, so axe stays loaded), or by loading it when the
 * page shows that path already (a state of it was checked: it starts afresh).
 */
async function visit(page: Page, route: RouteCheck): Promise<void> {
  const here = new URL(page.url());
  if (here.pathname === route.path || here.pathname === '/login' || here.protocol === 'about:') {
    await page.goto(route.path);
  } else {
    await page.evaluate((path) => {
      window.history.pushState(null, '', path);
      window.dispatchEvent(new PopStateEvent('popstate'));
    }, route.path);
  }
  await page.getByRole('heading', { level: 1, name: route.heading }).waitFor();
  await page.waitForFunction(() => document.querySelector('[aria-busy="true"]') === null);
  await route.open?.(page);
}

describe.skipIf(!canRun)('axe-core on every page, both themes, desktop and phone', () => {
  it('finds no serious or critical violation, every undecided contrast passes, nothing overflows', async () => {
    const serious: string[] = [];
    const lesser: string[] = [];
    const failedContrast: string[] = [];
    const overflowing: string[] = [];
    let undecided = 0;
    const reasons = new Map<string, number>();
    let checks = 0;
    for (const theme of THEMES) {
      for (const width of WIDTHS) {
        const { context, page } = await sessions.context(width, { colorScheme: theme });
        await context.addInitScript({ content: AXE });
        let loggedIn = false;
        for (const route of ROUTES) {
          if (route.access !== 'public' && !loggedIn) {
            await logIn(page, admin.email);
            loggedIn = true;
          }
          await visit(page, route);
          // The theme follows the system's (no choice remembered in this fresh browser).
          expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe(theme);
          const where = `${route.name} · ${theme} · ${width}px`;
          // Nothing runs off the side of the screen, at either width.
          const overflow = await page.evaluate(
            () => document.documentElement.scrollWidth - window.innerWidth,
          );
          if (overflow > 0) overflowing.push(`${where}: ${overflow}px wider than the screen`);
          const result = (await page.evaluate(
            (tags) =>
              (window as unknown as { axe: { run: (o: unknown) => Promise<unknown> } }).axe.run({
                runOnly: { type: 'tag', values: tags },
                resultTypes: ['violations', 'incomplete'],
              }),
            TAGS,
          )) as { violations: AxeResult[]; incomplete: AxeResult[] };
          checks++;
          for (const v of result.violations) {
            const line = `${where}: ${v.id} (${v.impact}) ${v.help} — ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`;
            if (v.impact === 'serious' || v.impact === 'critical') serious.push(line);
            else lesser.push(line);
          }
          const contrast = result.incomplete.find((r) => r.id === 'color-contrast');
          const targets = (contrast?.nodes ?? []).map((n) => ({
            target: n.target.join(' '),
            why: n.any.map((a) => a.message).join('; '),
          }));
          undecided += targets.length;
          for (const n of contrast?.nodes ?? []) {
            // axe's reason, e.g. bgOverlap (something may lie over the text), pseudoContent, bgImage.
            const why = n.any
              .map((x) => (x.data as { messageKey?: string } | null)?.messageKey ?? x.id)
              .join('+');
            reasons.set(why, (reasons.get(why) ?? 0) + 1);
          }
          for (const d of await decideContrast(page, targets)) {
            if (d.ratio < d.required) {
              failedContrast.push(
                `${where}: ${d.target} ${d.ratio.toFixed(2)}:1 < ${d.required}:1 (${d.why})`,
              );
            }
          }
        }
        await context.close();
      }
    }
    const pages = ROUTES.length;
    console.log(
      `axe-core ${(await import('axe-core')).default.version}: ${pages} pages × ${THEMES.length} themes × ${WIDTHS.length} widths = ${checks} checks; ` +
        `serious or critical violations: ${serious.length}; moderate or minor: ${lesser.length}; ` +
        `undecided color-contrast checks: ${undecided}, decided here, failing: ${failedContrast.length}`,
    );
    for (const [why, n] of reasons) console.log(`  undecided contrast ×${n}: ${why}`);
    for (const line of [...serious, ...lesser, ...failedContrast, ...overflowing]) console.log(`  ${line}`);
    expect(checks).toBe(pages * THEMES.length * WIDTHS.length);
    expect(serious).toEqual([]);
    expect(failedContrast).toEqual([]);
    expect(overflowing).toEqual([]);
  }, 900_000);
});
