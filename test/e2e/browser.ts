import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { CHROMIUM, canRun, findProgram, notInstalled } from '../helpers/system-programs.js';

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
 * Whether the browser tests can run here: Chromium installed (`.ci/run` installs it) and the dashboard
 * built. Outside CI a missing one skips them with a SKIPPED line; on CI (CI=true) it fails the run.
 */
export function browserTestsCanRun(): boolean {
  const reasons: string[] = [];
  if (findProgram(CHROMIUM) === undefined) reasons.push(notInstalled(CHROMIUM));
  if (!existsSync(join(WEB_DIST, 'index.html'))) reasons.push('the dashboard is not built (npm run build)');
  return canRun('the dashboard in a real browser', reasons);
}

export function launchChromium(): Promise<Browser> {
  const executablePath = findProgram(CHROMIUM);
  if (executablePath === undefined) throw new Error(notInstalled(CHROMIUM));
  return chromium.launch({ executablePath, args: ARGS, headless: true });
}
