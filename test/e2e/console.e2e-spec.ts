import { Browser, BrowserContext, Page } from 'playwright-core';
import { createTask, getTask, makeTask, operator } from '../harness/controller-tasks';
import { launchChromium, screenshot, watchErrors } from '../harness/browser';
import { http } from '../harness/http';
import { skillsApi } from '../harness/skills';
import { startTestSystem, TestSystem } from '../harness/system';
import { waitFor } from '../harness/wait';
import { makeWorkflow, pushPayload, sendWebhook, signedWebhook } from '../harness/webhooks';
import { skillPackage } from '../harness/zip-builder';

// Needs dist/console (`npm run build`) and /usr/bin/chromium.
jest.setTimeout(120_000);

/** The operator console in a real browser (Debian's chromium, headless), against the real system. */
describe('operator console', () => {
  let system: TestSystem;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let errors: string[];

  const row = (guid: string) => page.locator(`tr[data-task="${guid}"]`);

  beforeAll(async () => {
    system = await startTestSystem({ role: 'all', storage: 's3', env: { TRACE_URL_TEMPLATE: 'https://tempo.example/explore?traceId={trace_id}' } });
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    page = await context.newPage();
    errors = watchErrors(page);
  });
  afterAll(async () => {
    await browser?.close();
    await system?.close();
  });
  afterEach(() => expect(errors).toEqual([]));

  it('is served with a strict Content-Security-Policy and signs in with an operator token', async () => {
    const answer = await http('GET', `${system.controllerUrl}/console/`);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect(answer.text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);

    await page.goto(`${system.controllerUrl}/console/`);
    await page.getByLabel('Operator token').fill(system.apiToken);
    await screenshot(page, '01-sign-in');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Tasks' }).waitFor();
    expect(await page.evaluate('Object.keys(localStorage).length')).toBe(0);
    expect(await page.content()).not.toContain(system.apiToken);
  });

  it('shows a task created through the API appear and finish live, without a reload', async () => {
    await page.locator('.live.on').waitFor();
    const guid = (await createTask(system, { brief: { prompt: 'console' } })).body.guid as string;
    await row(guid).waitFor({ timeout: 15_000 });
    await row(guid).locator('.status-completed').waitFor({ timeout: 40_000 });
    expect(await row(guid).locator('progress').getAttribute('value')).toBe('100');
    await screenshot(page, '02-tasks');
  });

  it("follows a running task's logs on its page", async () => {
    const guid = (await createTask(system, { agent_image: 'agent-examples/sleep', env: { SLEEP_SECONDS: '4' }, brief: { prompt: 'follow me' } })).body.guid as string;
    await page.goto(`${system.controllerUrl}/console/#/tasks/${guid}`);
    const logs = page.getByLabel('Task output');
    await logs.filter({ hasText: 'sleeping 4 s' }).waitFor({ timeout: 30_000 });
    await logs.filter({ hasText: 'completed' }).waitFor({ timeout: 30_000 });
    await page.locator('.timeline .status-completed').waitFor({ timeout: 30_000 });
    await page.getByLabel('Brief').filter({ hasText: 'follow me' }).waitFor();
    await screenshot(page, '03-task-detail');
  });

  it("links a task's trace id through TRACE_URL_TEMPLATE", async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const created = await http('POST', `${system.controllerUrl}/api/v1/tasks/`, {
      headers: { ...operator(system), traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
      json: makeTask({ brief: { prompt: 'traced' } }),
    });
    expect(created.body.trace_id).toBe(traceId);
    await page.goto(`${system.controllerUrl}/console/#/tasks/${created.body.guid}`);
    const link = page.getByRole('link', { name: traceId });
    await link.waitFor();
    expect(await link.getAttribute('href')).toBe(`https://tempo.example/explore?traceId=${traceId}`);
  });

  it('cancels a running task from its page', async () => {
    const guid = (await createTask(system, { agent_image: 'agent-examples/sleep', env: { SLEEP_SECONDS: '120' } })).body.guid as string;
    // The controller sees a task as running from its first progress report; this agent sends none.
    await waitFor(async () => (await getTask(system, guid)).body.status === 'dispatched', 30_000, 'the task to be dispatched');
    await page.goto(`${system.controllerUrl}/console/#/tasks/${guid}`);
    await page.getByRole('button', { name: 'Cancel task' }).click();
    await page.locator('.heading .status-cancelled').waitFor({ timeout: 30_000 });
    expect((await getTask(system, guid)).body.status).toBe('cancelled');
  });

  it('replays a webhook delivery from the ledger', async () => {
    await http('POST', `${system.controllerUrl}/api/v1/workflows/`, { headers: operator(system), json: makeWorkflow('console-push') });
    expect((await sendWebhook(system.controllerUrl, await signedWebhook('forge', pushPayload()))).status).toBe(200);
    await page.goto(`${system.controllerUrl}/console/#/deliveries`);
    await page.getByRole('button', { name: 'Replay' }).first().click();
    await page.getByRole('status').filter({ hasText: 'Replayed as' }).waitFor();
    expect(await page.locator('tr[data-delivery]').count()).toBe(2);
    await screenshot(page, '04-deliveries');
  });

  it('uploads a skill version and lists it with its hash', async () => {
    const slug = await skillsApi(system).makeSkill({ description: 'Reviews code' });
    await page.goto(`${system.controllerUrl}/console/#/skills/${slug}`);
    await page.getByLabel('New version (zip)').setInputFiles({ name: 'skill.zip', mimeType: 'application/zip', buffer: skillPackage() });
    await page.getByRole('button', { name: 'Upload' }).click();
    await page.locator('tr[data-version="1"]').waitFor();
    const stored = (await skillsApi(system).get(slug)).body.versions[0];
    expect(await page.locator('tr[data-version="1"] .hash').getAttribute('title')).toBe(stored.content_hash);
    await screenshot(page, '05-skills');
  });

  it('lists dispatchers and workflows, and disables a workflow', async () => {
    await page.goto(`${system.controllerUrl}/console/#/dispatchers`);
    await page.locator('td .status-online').first().waitFor();
    await screenshot(page, '06-dispatchers');
    await page.goto(`${system.controllerUrl}/console/#/workflows`);
    await page.getByRole('button', { name: 'Disable' }).click();
    await page.getByRole('button', { name: 'Enable' }).waitFor();
    expect((await http('GET', `${system.controllerUrl}/api/v1/workflows/console-push/`, { headers: operator(system) })).body.enabled).toBe(false);
    await page.getByRole('button', { name: 'Runs' }).click();
    await page.locator('.card table').waitFor();
    await screenshot(page, '07-workflows');
  });

  it('signs in with OAuth client credentials and keeps only the access token', async () => {
    const client = await http('POST', `${system.controllerUrl}/api/v1/oauth/clients/`, {
      headers: operator(system), json: { name: 'console-reader', scopes: ['tasks:read', 'dispatchers:read'] },
    });
    const other = await context.browser()!.newContext({ viewport: { width: 1280, height: 800 } });
    const reader = await other.newPage();
    const readerErrors = watchErrors(reader);
    await reader.goto(`${system.controllerUrl}/console/`);
    await reader.getByRole('tab', { name: 'OAuth client' }).click();
    await reader.getByLabel('Client id').fill(client.body.client_id);
    await reader.getByLabel('Client secret').fill(client.body.client_secret);
    await reader.getByRole('button', { name: 'Sign in' }).click();
    await reader.locator('tr[data-task]').first().waitFor();
    const kept = String(await reader.evaluate('JSON.stringify(sessionStorage)'));
    expect(kept).toContain('accessToken');
    expect(kept).not.toContain(client.body.client_secret);
    await other.close();
    expect(readerErrors).toEqual([]);
  });

  it('is readable on a phone', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${system.controllerUrl}/console/#/tasks`);
    await page.locator('tr[data-task]').first().waitFor();
    await screenshot(page, '08-tasks-phone');
    const overflow = await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth');
    expect(overflow).toBe(0);
  });
});
