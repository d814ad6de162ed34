import { Browser, Page } from 'playwright-core';
import { consoleSignedIn, launchChromium, screenshot } from '../harness/browser';
import { http } from '../harness/http';
import { startTestSystem, TestSystem } from '../harness/system';
import { waitFor } from '../harness/wait';
import { killPoolAgents, makePool, poolAgents, waitForIdle } from '../harness/warm-pools';

// Needs dist/ and dist/console (`npm run build`) and /usr/bin/chromium.
jest.setTimeout(120_000);

/** The dispatcher's warm pools as its heartbeat reports them to the controller, on the console's Dispatchers page. */
describe('operator console: warm pools', () => {
  let system: TestSystem;
  let browser: Browser;
  let page: Page;
  let errors: string[];

  const dispatchers = async () => (await http('GET', `${system.controllerUrl}/api/v1/dispatchers/`, { headers: { Authorization: `Token ${system.apiToken}` } })).body;
  const reported = async () => {
    const body = await dispatchers();
    return (Array.isArray(body) ? body : body.results)[0]?.warm_pools ?? [];
  };

  beforeAll(async () => {
    system = await startTestSystem({ role: 'all', env: { WARM_POOLS: JSON.stringify([makePool({ size: 2 })]), HEARTBEAT_INTERVAL_SECONDS: '1' } });
    await waitForIdle(system, 'echo', 2);
    await waitFor(async () => (await reported())[0]?.idle === 2, 20_000, 'the heartbeat to report two idle agents');
    browser = await launchChromium();
    ({ page, errors } = await consoleSignedIn(browser, system.controllerUrl, system.apiToken));
  });
  afterAll(async () => {
    await browser?.close();
    const agents = system ? await poolAgents(system) : [];
    await system?.close();
    killPoolAgents(agents.map((agent) => agent.agent_id));
  });
  afterEach(() => expect(errors).toEqual([]));

  it('reports each pool in the dispatcher view: size, idle and claimed agents', async () => {
    expect(await reported()).toEqual([{ name: 'echo', backend: 'local', image: 'agent-examples/echo', size: 2, idle: 2, claimed: 0 }]);
  });

  it('shows the pool with its idle agents and its dispatcher on the Dispatchers page', async () => {
    await page.getByRole('link', { name: 'Dispatchers' }).click();
    await page.getByRole('heading', { name: 'Warm pools' }).waitFor();
    const row = page.locator('section[aria-labelledby="warm-pools-title"] tbody tr');
    await row.filter({ hasText: '2 / 2' }).waitFor();
    expect(await row.count()).toBe(1);
    const text = await row.textContent();
    expect(text).toContain('echo');
    expect(text).toContain('agent-examples/echo');
    expect(text).toContain('local');
    expect(text).not.toContain('refilling');
    expect(await row.getByRole('meter').getAttribute('aria-label')).toBe('2 of 2 idle');
    await screenshot(page, 'warm-pools-01-full');
  });

  it('is readable on a phone', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByRole('heading', { name: 'Warm pools' }).waitFor();
    const overflow = await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth');
    expect(overflow).toBeLessThanOrEqual(0);
    await screenshot(page, 'warm-pools-02-phone');
    await page.setViewportSize({ width: 1280, height: 800 });
  });
});
