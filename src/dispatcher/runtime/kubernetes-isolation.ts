import type { V1Container, V1Job } from '@kubernetes/client-node';
import type { AgentIsolation } from '../../shared/task-protocol/isolation';

/** Writable scratch space on a read-only root: `/tmp`, and the agent's working folder. */
export const TMP_VOLUME = 'tmp';
export const WORKSPACE_VOLUME = 'workspace';
export const WORKSPACE_PATH = '/workspace';

/**
 * Hardens the agent's pod as the task's isolation says: no privilege escalation, every
 * capability dropped and the runtime's default seccomp profile (never relaxed); a non-root
 * user and a read-only root filesystem (with emptyDir `/tmp` and `/workspace`) unless the
 * task or the dispatcher's settings relax them; and the task's runtime class.
 */
export function applyIsolation(job: V1Job, isolation: AgentIsolation): void {
  const pod = job.spec!.template.spec!;
  const { security } = isolation;
  pod.securityContext = {
    runAsNonRoot: security.runAsNonRoot,
    seccompProfile: { type: 'RuntimeDefault' },
    ...(security.runAsUser !== null ? { runAsUser: security.runAsUser, runAsGroup: security.runAsUser, fsGroup: security.runAsUser } : {}),
  };
  if (isolation.runtimeClass) pod.runtimeClassName = isolation.runtimeClass;
  pod.volumes = [
    { name: TMP_VOLUME, emptyDir: {} },
    { name: WORKSPACE_VOLUME, emptyDir: {} },
  ];
  for (const container of pod.containers) hardenContainer(container, isolation);
}

function hardenContainer(container: V1Container, isolation: AgentIsolation): void {
  container.securityContext = {
    allowPrivilegeEscalation: false,
    privileged: false,
    capabilities: { drop: ['ALL'] },
    readOnlyRootFilesystem: isolation.security.readOnlyRootFilesystem,
  };
  container.volumeMounts = [
    { name: TMP_VOLUME, mountPath: '/tmp' },
    { name: WORKSPACE_VOLUME, mountPath: WORKSPACE_PATH },
  ];
}
