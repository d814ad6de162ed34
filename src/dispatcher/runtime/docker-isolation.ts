import type Docker from 'dockerode';
import type { AgentIsolation } from '../../shared/task-protocol/isolation';

/** Scratch space on a read-only root, as on Kubernetes: `/tmp` and `/workspace`, in memory. */
// mode 1777: writable by the task's user, whichever it is, as /tmp always is.
const TMPFS_OPTIONS = 'rw,nosuid,nodev,size=256m,mode=1777';

/**
 * The part of a task's isolation a container engine can apply: egress `none` is no network
 * at all (`dispatcher` and `open` keep DOCKER_NETWORK: the engine has no per-destination
 * rules), no capabilities, no-new-privileges, a read-only root with tmpfs scratch space, the
 * task's user, and a limit on processes. A runtime class has no meaning here.
 */
export function containerIsolation(isolation: AgentIsolation, network: string, pidsLimit: number): Pick<Docker.ContainerCreateOptions, 'User'> & { HostConfig: Docker.HostConfig } {
  const { security } = isolation;
  return {
    ...(security.runAsUser !== null ? { User: `${security.runAsUser}:${security.runAsUser}` } : {}),
    HostConfig: {
      NetworkMode: isolation.network.egress === 'none' ? 'none' : network,
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      ReadonlyRootfs: security.readOnlyRootFilesystem,
      Tmpfs: { '/tmp': TMPFS_OPTIONS, '/workspace': TMPFS_OPTIONS },
      PidsLimit: pidsLimit,
    },
  };
}
