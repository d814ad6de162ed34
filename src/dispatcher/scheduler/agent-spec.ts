import { AppConfig } from '../../shared/config/config';
import { perTaskAgentKey } from '../auth/agent-keys';
import { AgentSpec } from '../runtime/runtime';
import { TaskEntity } from '../tasks/task.entity';

/** What a backend needs to run a task's agent: the task's env plus TASK_ID, DISPATCHER_URL and the per-task AGENT_KEY. */
export function agentSpecOf(task: TaskEntity, config: Pick<AppConfig, 'agentKey' | 'dispatcherPublicUrl'>): AgentSpec {
  return {
    taskId: task.taskId,
    image: task.agentImage,
    namespace: task.runtimeNamespace,
    env: {
      ...task.env,
      TASK_ID: task.taskId,
      DISPATCHER_URL: config.dispatcherPublicUrl,
      AGENT_KEY: perTaskAgentKey(config.agentKey, task.taskId),
    },
    resources: task.resources,
    ports: task.ports.map((port) => ({
      containerPort: port.container_port,
      protocol: port.protocol.toUpperCase() as 'TCP' | 'UDP' | 'SCTP',
    })),
    timeoutSeconds: task.timeoutSeconds,
    pod: task.podAdditions,
  };
}
