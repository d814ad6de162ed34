import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { Browser, chromium, Page } from 'playwright-core';

/** Debian's chromium (`apt-get install chromium`): playwright-core never downloads a browser. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const SCREENSHOTS = path.resolve(__dirname, '../.tmp/screenshots');

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync',
    ],
  });
}

/** Saves a full-page screenshot under test/.tmp/screenshots (git-ignored) to look at after the run. */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/**
 * Collects what the page reports as errors: uncaught exceptions, failed requests and
 * Content-Security-Policy violations (logged by the browser as console errors).
 */
export function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(`pageerror: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error' && !/Failed to load resource|ERR_ABORTED|aborted/i.test(message.text())) errors.push(`console: ${message.text()}`);
  });
  return errors;
}

/**
 * A page of a new browser context signed in to the controller's console with the operator token,
 * showing the task list, and the errors it reports from then on.
 */
export async function consoleSignedIn(browser: Browser, controllerUrl: string, apiToken: string): Promise<{ page: Page; errors: string[] }> {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  const errors = watchErrors(page);
  await page.goto(`${controllerUrl}/console/`);
  await page.getByLabel('Operator token').fill(apiToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Tasks' }).waitFor();
  return { page, errors };
}
