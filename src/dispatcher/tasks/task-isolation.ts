import type { TaskNetwork, TaskSecurity, TaskSkill } from '../../shared/task-protocol/isolation';
import type { CreateTaskDto } from './tasks.dto';

export interface RequestIsolation {
  skills?: TaskSkill[];
  runtime_class?: string;
  network?: TaskNetwork;
  security?: TaskSecurity;
}

/** The request's additive fields with known keys only; an absent field stays absent. */
export function isolationOf(dto: CreateTaskDto): RequestIsolation {
  const fields: RequestIsolation = {};
  if (dto.skills?.length) {
    fields.skills = dto.skills.map(({ slug, version_number, content_hash, storage_ref }) => ({ slug, version_number, content_hash, storage_ref }));
  }
  if (dto.runtime_class !== undefined) fields.runtime_class = dto.runtime_class;
  if (dto.network) {
    fields.network = {};
    if (dto.network.egress !== undefined) fields.network.egress = dto.network.egress;
    if (dto.network.allow) fields.network.allow = dto.network.allow.map((entry) => ({ cidr: entry.cidr, ports: entry.ports ?? [] }));
  }
  if (dto.security) {
    const { run_as_non_root, run_as_user, read_only_root_filesystem } = dto.security;
    fields.security = JSON.parse(JSON.stringify({ run_as_non_root, run_as_user, read_only_root_filesystem })) as TaskSecurity;
  }
  return fields;
}
