import { disruptedPods, evictionLimitState, recordDisruptionsPatch } from './kubernetes-evictions';
import { DISRUPTED_PODS_ANNOTATION } from './kubernetes-manifests';

describe('eviction replacements', () => {
  it('allows as many disruptions as replacements, and names the setting past that', () => {
    expect(evictionLimitState(3, 3)).toBeUndefined();
    expect(evictionLimitState(1, null)).toBeUndefined();
    expect(evictionLimitState(1, 0)).toEqual({
      phase: 'exited', exitCode: -1, reason: 'EvictionLimit',
      message: "the agent's pod was evicted or disrupted 1 times; AGENT_MAX_EVICTION_REPLACEMENTS (0) allows no more replacements",
    });
  });

  it('reads and writes the uids on the Job, escaping the annotation key in the JSON pointer', () => {
    expect(disruptedPods({ metadata: { annotations: { [DISRUPTED_PODS_ANNOTATION]: 'a,b' } } })).toEqual(['a', 'b']);
    expect(disruptedPods({ metadata: {} })).toEqual([]);
    expect(recordDisruptionsPatch({ metadata: { annotations: {} } }, ['a', 'b'])).toEqual([{ op: 'add', path: '/metadata/annotations/agent-tasks.dev~1disrupted-pods', value: 'a,b' }]);
    expect(recordDisruptionsPatch({ metadata: {} }, ['a'])).toEqual([{ op: 'add', path: '/metadata/annotations', value: { [DISRUPTED_PODS_ANNOTATION]: 'a' } }]);
  });
});
