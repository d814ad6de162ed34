import { Browser, Page } from 'playwright-core';
import { createTask } from '../harness/controller-tasks';
import { EventReceiver } from '../harness/event-receiver';
import { consoleSignedIn, launchChromium, screenshot } from '../harness/browser';
import { startTestSystem, TestSystem } from '../harness/system';
import { waitFor } from '../harness/wait';

// Needs dist/console (`npm run build`) and /usr/bin/chromium.
jest.setTimeout(120_000);

/** The console's subscriptions page in a real browser: subscribe, see the secret once, follow deliveries, replay. */
describe('operator console: event subscriptions', () => {
  let system: TestSystem;
  let browser: Browser;
  let page: Page;
  let errors: string[];
  let endpoint: EventReceiver;

  beforeAll(async () => {
    system = await startTestSystem({ env: { SUBSCRIPTION_ALLOWED_CIDRS: '127.0.0.2/32' } });
    endpoint = await new EventReceiver('127.0.0.2').start();
    browser = await launchChromium();
    ({ page, errors } = await consoleSignedIn(browser, system.controllerUrl, system.apiToken));
  });
  afterAll(async () => {
    await browser?.close();
    await endpoint?.stop();
    await system?.close();
  });
  afterEach(() => expect(errors).toEqual([]));

  it('subscribes an endpoint, shows its secret once, and lists its deliveries with a replay', async () => {
    await page.getByRole('link', { name: 'Subscriptions' }).click();
    await page.getByRole('heading', { name: 'Event subscriptions' }).waitFor();
    await page.getByLabel('URL').fill(endpoint.url);
    await page.getByLabel('task.created').check();
    await page.getByRole('button', { name: 'Subscribe' }).click();
    const secret = await page.locator('[data-secret]').textContent();
    expect(secret).toMatch(/^whsec_/);
    await screenshot(page, 'subscriptions-01-created');

    const guid = (await createTask(system, { brief: { prompt: 'console subscription' } })).body.guid as string;
    const delivery = await waitFor(() => endpoint.ofType('task.created').find((d) => d.body.data.task_guid === guid), 20_000, 'the delivery');
    expect(endpoint.verify(delivery, secret!)).toEqual(delivery.body);

    await page.locator('tr[data-subscription] a').first().click();
    const row = page.locator(`tr[data-delivery="${delivery.id}"]`);
    await row.waitFor();
    expect(await row.textContent()).toContain('delivered');
    await row.getByRole('button', { name: 'Replay' }).click();
    await waitFor(() => endpoint.received.filter((d) => d.id === delivery.id).length === 2, 15_000, 'the replay');
    await page.reload();
    await page.getByRole('heading', { name: /Deliveries of/ }).waitFor();
    await screenshot(page, 'subscriptions-02-deliveries');

    await page.locator('tr[data-subscription]').first().getByRole('button', { name: 'Disable' }).click();
    await page.locator('tr[data-subscription]').first().getByRole('button', { name: 'Enable' }).waitFor();
    expect(await page.content()).not.toContain(secret!.slice(6, 30));
  });

  it('is readable on a phone', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByRole('heading', { name: 'Event subscriptions' }).waitFor();
    const overflow = await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth');
    expect(overflow).toBeLessThanOrEqual(0);
    await screenshot(page, 'subscriptions-03-phone');
  });
});
