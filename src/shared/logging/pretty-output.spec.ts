import { createRootLogger } from './logger';
import { logFormatFor, prettyDestination } from './pretty-output';
import { requestContext } from './request-context';

/** A pretty logger writing into an array, as the terminal would receive it. */
function prettyLogger() {
  const written: string[] = [];
  const logger = createRootLogger('info', 'json', prettyDestination(false, { write: (text: string) => void written.push(text) }));
  return { logger, text: () => written.join('') };
}

describe('LOG_FORMAT', () => {
  it('is pretty on a terminal and JSON elsewhere unless set', () => {
    expect(logFormatFor('auto', true)).toBe('pretty');
    expect(logFormatFor('auto', false)).toBe('json');
    expect(logFormatFor('json', true)).toBe('json');
    expect(logFormatFor('pretty', false)).toBe('pretty');
  });
});

describe('pretty lines', () => {
  it('put time, level, role, context and message on one line, other fields after it', () => {
    const { logger, text } = prettyLogger();
    requestContext.run({ role: 'dispatcher', requestId: 'req-7' }, () => logger.warn({ context: 'Scheduler', task: 't-1' }, 'Agent did not start'));
    expect(text()).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] WARN: dispatcher Scheduler: Agent did not start \{"request_id":"req-7","task":"t-1"\}\n$/);
  });

  it('say an access line as method, path, status and duration', () => {
    const { logger, text } = prettyLogger();
    requestContext.run({ role: 'controller', requestId: 'req-8' }, () =>
      logger.info({ method: 'GET', url: '/api/v1/tasks/?token=[redacted]', status: 200, duration_ms: 3.1 }, 'request completed'));
    expect(text()).toMatch(/\] INFO: controller GET \/api\/v1\/tasks\/\?token=\[redacted\] 200 3.1 ms\n$/);
  });

  it('keep the status field on lines that are not access lines, and print error stacks', () => {
    const { logger, text } = prettyLogger();
    logger.error({ err: new Error('engine gone'), status: 503 }, 'Dispatch failed');
    expect(text()).toContain('ERROR: Dispatch failed {"status":503}');
    expect(text()).toContain('Error: engine gone');
    expect(text()).toMatch(/\n\s+at /);
  });

  it('still redact credentials', () => {
    const { logger, text } = prettyLogger();
    logger.info({ req: { headers: { authorization: 'Token secret-value' } }, body: { client_secret: 'cs-value' } }, 'seen');
    expect(text()).not.toMatch(/secret-value|cs-value/);
  });
});
