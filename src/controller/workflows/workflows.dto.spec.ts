import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { fieldErrors } from '../../shared/errors/validation';
import { TaskTemplateDto } from '../tasks/tasks.dto';
import { WorkflowTaskTemplateDto } from './workflows.dto';

const template = { agent_image: 'agent-examples/echo', runtime_target: { type: 'local' }, brief: {} };

function problems(dto: new () => object, change: object) {
  return fieldErrors(validateSync(plainToInstance(dto, { ...template, ...change }), { whitelist: true, forbidUnknownValues: false }));
}

describe("a workflow's task template", () => {
  it.each([
    ['agent_image', { agent_image: 'Bad Image!' }],
    ['runtime_target.namespace', { runtime_target: { type: 'kubernetes', namespace: 'Not_A_Namespace' } }],
    ['env', { env: { '1BAD': 'x' } }],
    ['dispatcher_labels', { dispatcher_labels: { '': 'x' } }],
    ['brief', { brief: { x: '{{secrets.token}}' } }],
  ])('holds %s to stricter rules than POST /tasks/', (field, change) => {
    expect(Object.keys(problems(TaskTemplateDto, change))).toEqual([]);
    expect(Object.keys(problems(WorkflowTaskTemplateDto, change))).toEqual([field]);
  });

  it.each([
    ['runtime_target.type', { runtime_target: { type: 'Main Frame!' } }],
    ['resources.memory', { resources: { cpu: '1' } }],
    ['resources.cpu', { resources: { cpu: 'lots', memory: '1Gi' } }],
    ['skills', { skills: ['Bad Skill'] }],
    ['timeout_seconds', { timeout_seconds: 0 }],
    ['ports.0.protocol', { ports: [{ container_port: 80, protocol: 'http' }] }],
    ['labels', { labels: { team: 7 } }],
    ['node_selector', { node_selector: ['gpu'] }],
    ['tolerations.0.operator', { tolerations: [{ key: 'dedicated', operator: 'Maybe' }] }],
    ['priority_class', { priority_class: 'Not A Name' }],
  ])('checks %s as POST /tasks/ does, with the same message', (field, change) => {
    const expected = problems(TaskTemplateDto, change);
    expect(Object.keys(expected)).toEqual([field]);
    expect(problems(WorkflowTaskTemplateDto, change)).toEqual(expected);
  });

  it('takes any runtime type name: the controller keeps no list of them', () => {
    for (const type of ['local', 'kubernetes', 'nomad', 'gpu-pool-2']) {
      expect(problems(WorkflowTaskTemplateDto, { runtime_target: { type } })).toEqual({});
      expect(problems(TaskTemplateDto, { runtime_target: { type } })).toEqual({});
    }
  });

  it('takes the pod additions a dispatcher may allow', () => {
    const additions = {
      labels: { 'tasks.example.com/run': 'nightly' }, annotations: { 'tasks.example.com/ticket': 'OPS-1' }, node_selector: { gpu: 'a100' },
      tolerations: [{ key: 'dedicated', operator: 'Exists', effect: 'NoSchedule', tolerationSeconds: 60 }], priority_class: 'batch-low',
    };
    expect(problems(WorkflowTaskTemplateDto, additions)).toEqual({});
    expect(problems(TaskTemplateDto, additions)).toEqual({});
  });
});
