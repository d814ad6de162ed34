import { badPlaceholders, fillBrief, filterMatches, pickWorkflow, RoutableWorkflow, WebhookEvent, WorkflowTrigger } from './workflow-routing';

const push = {
  ref: 'refs/heads/main',
  repository: { full_name: 'acme/app', private: false, stars: 42, topics: null },
  commits: [{ id: 'c0ffee', message: 'Fix the build' }],
  pusher: { name: 'ada' },
};

function makeEvent(overrides: Partial<WebhookEvent> = {}): WebhookEvent {
  return { source: 'forge', event: 'push', payload: push, ...overrides };
}

let clock = 0;
function makeWorkflow(id: string, overrides: Partial<RoutableWorkflow> = {}, trigger: Partial<WorkflowTrigger> = {}): RoutableWorkflow {
  clock += 1000;
  return {
    id,
    enabled: true,
    priority: 100,
    createdAt: new Date(clock),
    triggers: [{ source: 'forge', event: 'push', filter: {}, ...trigger }],
    ...overrides,
  };
}

describe('filter matching', () => {
  it.each([
    ['repository.full_name', 'acme/app', true],
    ['repository.full_name', 'acme/other', false],
    ['repository.full_name', 'acme/*', true],
    ['repository.full_name', '*/app', true],
    ['repository.full_name', 'acme*app', true],
    ['repository.full_name', 'other/*', false],
    ['ref', 'refs/heads/*', true],
    ['ref', '*', true],
    ['repository.stars', 42, true],
    ['repository.stars', '42', true],
    ['repository.stars', 41, false],
    ['repository.private', false, true],
    ['repository.private', true, false],
    ['repository.topics', null, true],
    ['repository.missing', null, false],
    ['commits.0.id', 'c0ffee', true],
    ['commits.1.id', '*', false],
    ['repository', '*', false],
    ['pusher.name.first', 'ada', false],
  ] as const)('%s against %j -> %s', (path, expected, matches) => {
    expect(filterMatches(push, path, expected)).toBe(matches);
  });

  it('treats glob characters other than * literally', () => {
    expect(filterMatches({ name: 'a.b' }, 'name', 'a?b')).toBe(false);
    expect(filterMatches({ name: 'a+b(c)' }, 'name', 'a+b(*)')).toBe(true);
  });
});

describe('workflow routing', () => {
  it('picks the lowest priority number first', () => {
    const workflows = [makeWorkflow('late', { priority: 20 }), makeWorkflow('early', { priority: 10 })];
    expect(pickWorkflow(workflows, makeEvent())?.id).toBe('early');
  });

  it('breaks priority ties by age, oldest first', () => {
    const older = makeWorkflow('older');
    const newer = makeWorkflow('newer');
    expect(pickWorkflow([newer, older], makeEvent())?.id).toBe('older');
  });

  it('skips disabled workflows', () => {
    const workflows = [makeWorkflow('off', { enabled: false, priority: 1 }), makeWorkflow('on', { priority: 2 })];
    expect(pickWorkflow(workflows, makeEvent())?.id).toBe('on');
  });

  it('needs source, event and every filter entry to match', () => {
    const workflows = [
      makeWorkflow('chat', { priority: 1 }, { source: 'chat' }),
      makeWorkflow('pr', { priority: 2 }, { event: 'pull_request' }),
      makeWorkflow('half', { priority: 3 }, { filter: { 'repository.full_name': 'acme/app', ref: 'refs/heads/dev' } }),
      makeWorkflow('all', { priority: 4 }, { filter: { 'repository.full_name': 'acme/*', ref: 'refs/heads/main' } }),
    ];
    expect(pickWorkflow(workflows, makeEvent())?.id).toBe('all');
  });

  it('matches when any one of several triggers matches', () => {
    const workflow = makeWorkflow('multi');
    workflow.triggers = [{ source: 'chat', event: 'event_callback' }, { source: 'forge', event: 'push' }];
    expect(pickWorkflow([workflow], makeEvent())?.id).toBe('multi');
  });

  it('answers null when nothing matches', () => {
    expect(pickWorkflow([makeWorkflow('x', {}, { event: 'issues' })], makeEvent())).toBeNull();
    expect(pickWorkflow([], makeEvent())).toBeNull();
  });
});

describe('brief templates', () => {
  it('fills placeholders from the payload, keeping whole values and writing text inside text', () => {
    const brief = {
      task: 'Review {{payload.repository.full_name}} at {{ payload.commits.0.id }}',
      commits: '{{payload.commits}}',
      stars: '{{payload.repository.stars}}',
      missing: '{{payload.nothing.here}}',
      inText: 'by {{payload.nothing}}!',
      list: ['{{payload.pusher.name}}', 3],
    };
    expect(fillBrief(brief, push)).toEqual({
      task: 'Review acme/app at c0ffee',
      commits: push.commits,
      stars: 42,
      missing: null,
      inText: 'by !',
      list: ['ada', 3],
    });
  });

  it('names placeholders that do not point into the payload', () => {
    expect(badPlaceholders({ a: '{{payload.x}} {{secrets.token}}', b: ['{{ payload }}', '{{payload..x}}'] })).toEqual([
      '{{secrets.token}}',
      '{{payload..x}}',
    ]);
  });
});

describe('filter globs (picomatch, with payload values read as text)', () => {
  it.each([
    ['refs/heads/*', 'refs/heads/feature/deep/x', true],
    ['*.md', 'docs/guide.md', true],
    ['*', '.hidden', true],
    ['release-*', 'release-\nnext', true],
    ['!main', 'dev', false],
    ['{a,b}*', '{a,b}x', true],
    ['{a,b}*', 'ax', false],
    ['v[12]*', 'v1.0', false],
    ['a\\*', 'a\\b', true],
    ['*', '', false],
  ] as const)('%j against %j -> %s', (glob, value, matches) => {
    expect(filterMatches({ value }, 'value', glob)).toBe(matches);
  });
});
