import { AppConfig } from '../../shared/config/config';
import { AgentIsolationDefaults } from '../../shared/config/isolation-config';
import { AgentIsolation } from '../../shared/task-protocol/isolation';
import { perTaskAgentKey } from '../auth/agent-keys';
import { AgentSpec } from '../runtime/runtime';
import { agentTraceEnv, TraceCarrier } from '../../shared/tracing/trace-context';
import { parseSecretRef } from '../../shared/task-protocol/secret-env';
import { TaskEntity } from '../tasks/task.entity';

/** What a backend needs to run a task's agent: the task's env plus TASK_ID, DISPATCHER_URL, the per-task AGENT_KEY, TASK_DEADLINE and TRACEPARENT / TRACESTATE. */
export function agentSpecOf(task: TaskEntity, config: Pick<AppConfig, 'agentKey' | 'agentDispatcherUrl' | 'agentIsolation'>, trace: TraceCarrier | null = null): AgentSpec {
  return {
    taskId: task.taskId,
    image: task.agentImage,
    namespace: task.runtimeNamespace,
    env: {
      ...task.env,
      // The OpenTelemetry environment carrier: the agent's own spans join the task's trace.
      ...agentTraceEnv(trace),
      TASK_ID: task.taskId,
      DISPATCHER_URL: config.agentDispatcherUrl,
      AGENT_KEY: perTaskAgentKey(config.agentKey, task.taskId),
      // How long the agent's SDK waits out a dispatcher it cannot reach: its task's time-out.
      TASK_DEADLINE: (task.deadlineAt ? new Date(task.deadlineAt) : new Date(Date.now() + task.timeoutSeconds * 1000)).toISOString(),
    },
    resources: task.resources,
    ports: task.ports.map((port) => ({
      containerPort: port.container_port,
      protocol: port.protocol.toUpperCase() as 'TCP' | 'UDP' | 'SCTP',
    })),
    timeoutSeconds: task.timeoutSeconds,
    isolation: isolationOf(task, config.agentIsolation),
    pod: task.podAdditions,
    secretEnv: Object.fromEntries(Object.entries(task.secretEnv ?? {}).flatMap(([name, reference]) => {
      const ref = parseSecretRef(reference);
      return ref ? [[name, ref]] : [];
    })),
  };
}

/** The task's own isolation fields over the dispatcher's defaults. */
export function isolationOf(task: Pick<TaskEntity, 'runtimeClass' | 'network' | 'security'>, defaults: AgentIsolationDefaults): AgentIsolation {
  const security = task.security ?? {};
  return {
    runtimeClass: task.runtimeClass ?? defaults.runtimeClass,
    network: {
      egress: task.network?.egress ?? defaults.egress,
      allow: (task.network?.allow ?? []).map((entry) => ({ cidr: entry.cidr, ports: entry.ports ?? [] })),
    },
    security: {
      runAsNonRoot: security.run_as_non_root ?? defaults.runAsNonRoot,
      runAsUser: security.run_as_user ?? defaults.runAsUser,
      readOnlyRootFilesystem: security.read_only_root_filesystem ?? defaults.readOnlyRootFilesystem,
    },
  };
}
