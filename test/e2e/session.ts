/// <reference lib="dom" />
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { expect } from 'vitest';
import { PASSWORD } from '../dashboard/dashboard-helpers.js';

/**
 * Browser sessions of the newer browser tests: contexts whose pages' script errors are collected (and
 * checked after each test), a log-in, and the dashboard API as the page's script sees it.
 */
export class Sessions {
  private readonly errors: string[] = [];

  constructor(
    private readonly browser: () => Browser,
    private readonly url: () => string,
  ) {}

  /** Fails the test when a page logged a script error (failed requests the tests cause aside). */
  checkErrors(): void {
    expect(this.errors.splice(0)).toEqual([]);
  }

  async context(
    width: number,
    options: { colorScheme?: 'light' | 'dark' } = {},
  ): Promise<{ context: BrowserContext; page: Page }> {
    const context = await this.browser().newContext({
      viewport: { width, height: 844 },
      baseURL: this.url(),
      acceptDownloads: true,
      ...options,
    });
    context.on('page', (page) => {
      page.setDefaultTimeout(10_000);
      page.on('pageerror', (err) => this.errors.push(`${page.url()}: ${err.message}`));
      page.on('console', (msg) => {
        if (msg.type() === 'error' && !/status of (40\d|429)/.test(msg.text())) {
          this.errors.push(`${page.url()}: ${msg.text()}`);
        }
      });
    });
    return { context, page: await context.newPage() };
  }
}

export async function logIn(page: Page, email: string): Promise<void> {
  await page.goto('/login');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
}

/** Moves to a page through the navigation, as a user does, and waits for its heading. */
export async function go(page: Page, link: string, heading = link): Promise<void> {
  await page.getByRole('navigation').getByRole('link', { name: link, exact: true }).click();
  await page.getByRole('heading', { level: 1, name: heading }).waitFor();
}

/** What the page's script gets from the dashboard API (with the page's cookie). */
export async function apiGet<T = Record<string, unknown>>(page: Page, path: string): Promise<T> {
  return (await page.evaluate((p) => fetch(`/dashboard/api${p}`).then((r) => r.json()), path)) as T;
}
