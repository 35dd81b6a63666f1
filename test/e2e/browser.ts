import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium } from 'playwright-core';

/** Debian's Chromium (`apt-get install -y chromium`; `.ci/run` installs it when missing). */
export const CHROMIUM = '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

export const WEB_DIST = join(import.meta.dirname, '..', '..', 'web', 'dist');

/**
 * Why the browser tests cannot run here, or undefined when they can. On CI (CI=true) a missing browser
 * or an unbuilt app fails the run instead of skipping it.
 */
export function browserTestsUnavailable(): string | undefined {
  const problems: string[] = [];
  if (!existsSync(CHROMIUM)) {
    problems.push(
      `Chromium is not installed at ${CHROMIUM} (Debian/Ubuntu: sudo apt-get install -y chromium)`,
    );
  }
  if (!existsSync(join(WEB_DIST, 'index.html'))) {
    problems.push('the dashboard is not built (run npm run build)');
  }
  if (problems.length === 0) return undefined;
  const message = `Browser tests need: ${problems.join('; ')}.`;
  if (process.env.CI === 'true') throw new Error(`${message} CI must run them.`);
  console.warn(`\n⚠ Skipping the dashboard browser tests. ${message}\n`);
  return message;
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
}
