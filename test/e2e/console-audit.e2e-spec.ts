import { Browser, Page } from 'playwright-core';
import { clientBearer, createTask } from '../harness/controller-tasks';
import { consoleSignedIn, launchChromium, screenshot } from '../harness/browser';
import { http } from '../harness/http';
import { startTestSystem, TestSystem } from '../harness/system';

// Needs dist/console (`npm run build`) and /usr/bin/chromium.
jest.setTimeout(120_000);

/** The console's audit page in a real browser: who did what, filtered on the server, paged, and on a phone. */
describe('operator console: audit trail', () => {
  let system: TestSystem;
  let browser: Browser;
  let page: Page;
  let errors: string[];
  let clientId: string;
  let clientTask: string;

  beforeAll(async () => {
    system = await startTestSystem({ role: 'controller' });
    const client = await clientBearer(system, ['tasks:write', 'tasks:read']);
    clientId = (await http('GET', `${system.controllerUrl}/api/v1/auth/whoami/`, { headers: client })).body.id;
    const task = { agent_image: 'agent-examples/echo', runtime_target: { type: 'local', namespace: '' }, resources: { cpu: '100m', memory: '64Mi' }, timeout_seconds: 60, brief: {} };
    clientTask = (await http('POST', `${system.controllerUrl}/api/v1/tasks/`, { headers: client, json: task })).body.guid;
    expect((await http('POST', `${system.controllerUrl}/api/v1/oauth/clients/`, { headers: client, json: { name: 'x', scopes: [] } })).status).toBe(403);
    for (let i = 0; i < 55; i += 1) expect((await createTask(system, { brief: { n: i } })).status).toBe(201);
    browser = await launchChromium();
    ({ page, errors } = await consoleSignedIn(browser, system.controllerUrl, system.apiToken));
  });
  afterAll(async () => {
    await browser?.close();
    await system?.close();
  });
  afterEach(() => expect(errors).toEqual([]));

  it('lists the trail newest first and pages to older entries', async () => {
    await page.getByRole('link', { name: 'Audit trail' }).click();
    await page.getByRole('heading', { name: 'Audit trail' }).waitFor();
    await page.getByRole('status').filter({ hasText: '58 entries' }).waitFor();
    expect(await page.locator('tr[data-audit]').count()).toBe(50);
    expect(await page.locator('tr[data-audit]').first().textContent()).toContain('tasks.create');
    await screenshot(page, 'audit-01-list');
    await page.getByRole('button', { name: 'Older' }).click();
    await page.locator('tr[data-audit]').nth(8).waitFor({ state: 'detached' });
    expect(await page.locator('tr[data-audit]').count()).toBe(8);
    const older = await page.locator('tbody').textContent();
    expect(older).toContain('oauth.createClient');
    expect(older).toContain('permission_denied');
    await page.getByRole('button', { name: 'Newer' }).click();
    await page.locator('tr[data-audit]').nth(49).waitFor();
  });

  it('filters by actor and resource on the server', async () => {
    await page.getByLabel('Actor').fill(clientId);
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByRole('status').filter({ hasText: '2 entries' }).waitFor();
    const rows = page.locator('tr[data-audit]');
    expect(await rows.nth(0).textContent()).toMatch(/oauth\.createClient.*refused.*403 permission_denied/);
    expect(await rows.nth(1).textContent()).toContain('tasks.create');
    await screenshot(page, 'audit-02-filtered');
    await rows.nth(1).getByRole('link').click();
    await page.waitForURL(`**/console/#/tasks/${clientTask}`);
    await page.goBack();
    await page.getByRole('heading', { name: 'Audit trail' }).waitFor();
    await page.getByLabel('Resource type').selectOption('skill');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('No audit entries.').waitFor();
  });

  it('is readable on a phone', async () => {
    await page.getByLabel('Resource type').selectOption('');
    await page.getByLabel('Actor').fill('');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByRole('status').filter({ hasText: '58 entries' }).waitFor();
    await page.setViewportSize({ width: 390, height: 844 });
    const overflow = await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth');
    expect(overflow).toBeLessThanOrEqual(0);
    await page.getByLabel('Actor').fill(clientId);
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByRole('status').filter({ hasText: '2 entries' }).waitFor();
    await screenshot(page, 'audit-03-phone');
  });
});
