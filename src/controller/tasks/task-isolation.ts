import type { TaskNetwork, TaskSecurity } from '../../shared/task-protocol/isolation';
import type { TaskNetworkDto, TaskSecurityDto } from '../../shared/task-protocol/isolation.dto';
import type { TaskRequest } from '../../shared/task-protocol/task-request';
import type { Task } from './tasks.entity';

/** The validated network field as stored: known keys only, ports sorted and unique. */
export function networkOf(dto: TaskNetworkDto | undefined): TaskNetwork | null {
  if (!dto) return null;
  const network: TaskNetwork = {};
  if (dto.egress !== undefined) network.egress = dto.egress;
  if (dto.allow !== undefined) {
    network.allow = dto.allow.map((entry) => ({ cidr: entry.cidr, ports: [...new Set(entry.ports ?? [])].sort((a, b) => a - b) }));
  }
  return network;
}

export function securityOf(dto: TaskSecurityDto | undefined): TaskSecurity | null {
  if (!dto) return null;
  const security: TaskSecurity = {};
  if (dto.run_as_non_root !== undefined) security.run_as_non_root = dto.run_as_non_root;
  if (dto.run_as_user !== undefined) security.run_as_user = dto.run_as_user;
  if (dto.read_only_root_filesystem !== undefined) security.read_only_root_filesystem = dto.read_only_root_filesystem;
  return security;
}

/**
 * The additive fields of a task request (CONTRACT section 4), each sent only when the task
 * has it, so a request without them is byte-for-byte the seed's.
 */
export function isolationFields(task: Task): Pick<TaskRequest, 'skills' | 'runtime_class' | 'network' | 'security'> {
  const fields: Pick<TaskRequest, 'skills' | 'runtime_class' | 'network' | 'security'> = {};
  if (task.skills?.length) fields.skills = task.skills.map(({ slug, version_number, content_hash, storage_ref }) => ({ slug, version_number, content_hash, storage_ref }));
  if (task.runtimeClass) fields.runtime_class = task.runtimeClass;
  if (task.network) fields.network = task.network;
  if (task.security) fields.security = task.security;
  return fields;
}
