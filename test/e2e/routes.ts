import type { Page } from 'playwright-core';

/**
 * Every page of the dashboard, for the checks that visit them all (axe-core in axe.test.ts). Add a page
 * here when the app gets one: its path, its <h1>, whether it is an admin's or shown before logging in,
 * and optionally a state to check too (`open`: what to do on the page first, e.g. open a dialog).
 */
export interface RouteCheck {
  name: string;
  path: string;
  heading: string;
  access: 'public' | 'user' | 'admin';
  open?: (page: Page) => Promise<void>;
}

export const ROUTES: RouteCheck[] = [
  { name: 'log in', path: '/login', heading: 'Log in', access: 'public' },
  { name: 'sign up', path: '/signup', heading: 'Create your account', access: 'public' },
  { name: 'overview', path: '/', heading: 'Overview', access: 'user' },
  { name: 'API keys', path: '/keys', heading: 'API keys', access: 'user' },
  {
    name: 'API keys, create with limits',
    path: '/keys',
    heading: 'API keys',
    access: 'user',
    open: async (page) => {
      await page.getByText('Limits and restrictions (optional)').click();
      await page.getByRole('form', { name: 'Create a key' }).getByLabel('Only the ones chosen below').check();
    },
  },
  {
    name: 'API keys, edit dialog',
    path: '/keys',
    heading: 'API keys',
    access: 'user',
    open: async (page) => {
      await page
        .getByRole('button', { name: /^Edit key / })
        .first()
        .click();
      await page.getByRole('dialog').waitFor();
    },
  },
  { name: 'usage', path: '/usage', heading: 'Usage', access: 'user' },
  { name: 'models and prices', path: '/models', heading: 'Models and prices', access: 'user' },
  { name: 'top up', path: '/top-up', heading: 'Top up', access: 'user' },
  { name: 'usage totals', path: '/usage?view=totals', heading: 'Usage', access: 'user' },
  { name: 'playground', path: '/playground', heading: 'Playground', access: 'user' },
  { name: 'account', path: '/account', heading: 'Account', access: 'user' },
  { name: 'spend and calls (admin)', path: '/admin/usage', heading: 'Spend and calls', access: 'admin' },
  { name: 'audit log (admin)', path: '/admin/audit', heading: 'Audit log', access: 'admin' },
  { name: 'accounts (admin)', path: '/admin/accounts', heading: 'Accounts', access: 'admin' },
  { name: 'invites (admin)', path: '/admin/invites', heading: 'Invites', access: 'admin' },
  { name: 'providers (admin)', path: '/admin/providers', heading: 'Providers', access: 'admin' },
  { name: 'top-up codes (admin)', path: '/admin/codes', heading: 'Top-up codes', access: 'admin' },
  {
    name: 'top-up codes, a batch opened (admin)',
    path: '/admin/codes',
    heading: 'Top-up codes',
    access: 'admin',
    open: async (page) => {
      await page
        .getByRole('button', { name: /^Show codes of batch / })
        .first()
        .click();
      await page
        .getByText(/redeemed by/)
        .first()
        .waitFor();
    },
  },
];
