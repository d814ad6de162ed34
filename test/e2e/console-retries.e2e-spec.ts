import { Browser, Page } from 'playwright-core';
import { createTask, getTask, operator } from '../harness/controller-tasks';
import { consoleSignedIn, launchChromium, screenshot } from '../harness/browser';
import { http } from '../harness/http';
import { startTestSystem, TestSystem } from '../harness/system';
import { waitFor } from '../harness/wait';

// Needs dist/console (`npm run build`) and /usr/bin/chromium.
jest.setTimeout(120_000);

/** The console's view of retries: why a task waits, its attempts, and the dead letters with their re-run button. */
describe('operator console: retries and dead letters', () => {
  let system: TestSystem;
  let browser: Browser;
  let page: Page;
  let errors: string[];

  const finalTask = async (guid: string) => waitFor(async () => {
    const task = await getTask(system, guid);
    return ['failed', 'completed'].includes(task.body.status) ? task : null;
  }, 30_000, `task ${guid} to end`);

  beforeAll(async () => {
    system = await startTestSystem({ env: { LOCAL_IMAGE_COMMANDS: JSON.stringify({ 'test/broken': '/nonexistent/agent' }), TASK_DISPATCH_RETRY_SECONDS: '1' } });
    await waitFor(async () => (await http('GET', `${system.controllerUrl}/api/v1/dispatchers/local/`, { headers: operator(system) })).body?.state === 'online',
      15_000, 'the dispatcher to register');
    browser = await launchChromium();
    ({ page, errors } = await consoleSignedIn(browser, system.controllerUrl, system.apiToken));
  });
  afterAll(async () => {
    await browser?.close();
    await system?.close();
  });
  afterEach(() => expect(errors).toEqual([]));

  it('shows why a pending task waits between attempts', async () => {
    // A backoff of up to an hour: the task waits for attempt 2 while the page is looked at.
    const guid = (await createTask(system, { agent_image: 'test/broken', retry: { max_attempts: 3, backoff_seconds: 3600, max_backoff_seconds: 3600 } })).body.guid;
    await waitFor(async () => (await getTask(system, guid)).body.attempt === 2, 20_000, 'attempt 1 to fail');
    await page.goto(`${system.controllerUrl}/console/#/tasks/${guid}`);
    const waiting = page.locator('.waiting');
    await waiting.filter({ hasText: 'Attempt 1 failed (infra): The agent could not be started' }).waitFor();
    await waiting.filter({ hasText: 'Next try at' }).waitFor();
    await page.locator('.timeline').filter({ hasText: 'task.retrying' }).waitFor();
    await page.locator('tr[data-attempt="1"]').filter({ hasText: 'retried (infra)' }).waitFor();
    await page.locator('tr[data-attempt="2"] .status-pending').waitFor();
    await screenshot(page, 'retries-01-waiting');
    await http('POST', `${system.controllerUrl}/api/v1/tasks/${guid}/cancel/`, { headers: operator(system) });
  });

  it("lists a dead letter with its attempts, and re-runs it from the list", async () => {
    const guid = (await createTask(system, { agent_image: 'test/broken', retry: { max_attempts: 2, backoff_seconds: 1 } })).body.guid;
    expect((await finalTask(guid)).body).toMatchObject({ status: 'failed', dead_letter: true });

    await page.goto(`${system.controllerUrl}/console/#/tasks/${guid}`);
    await page.locator('tr[data-attempt="2"] .status-failed').waitFor();
    await page.locator('.facts').filter({ hasText: '2 of 2 · dead letter' }).waitFor();
    // Only this task's events: the task cancelled on the page before is not in its timeline.
    await page.locator('.timeline .status-failed').waitFor();
    expect(await page.locator('.timeline .status-cancelled').count()).toBe(0);
    await screenshot(page, 'retries-02-attempts');

    await page.getByRole('link', { name: 'Dead letters' }).click();
    const row = page.locator(`tr[data-dead-letter="${guid}"]`);
    await row.filter({ hasText: '2 of 2' }).waitFor();
    await screenshot(page, 'retries-03-dead-letters');
    await row.getByRole('button', { name: `Re-run ${guid.slice(0, 8)}` }).click();
    const notice = page.getByRole('status').filter({ hasText: 'Re-ran' });
    await notice.waitFor();
    await row.waitFor({ state: 'detached' });
    await screenshot(page, 'retries-04-rerun');

    const original = await getTask(system, guid);
    expect(original.body).toMatchObject({ dead_letter: false, reruns: [expect.any(String)] });
    await notice.getByRole('link').click();
    await page.locator('.facts').filter({ hasText: 'Re-run of' }).waitFor();
    expect(page.url()).toContain(original.body.reruns[0]);
  });
});
