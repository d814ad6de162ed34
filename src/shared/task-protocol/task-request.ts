import type { TaskNetwork, TaskSecurity, TaskSkill } from './isolation';
import type { PodAdditions } from './pod-additions';

/**
 * What the controller and the dispatcher must agree on about a task request (the seed's
 * `POST /tasks` body): its shapes and the defaults either side fills in for an omitted field.
 */
export interface TaskResources {
  cpu: string;
  memory: string;
}

export interface TaskPort {
  container_port: number;
  protocol: string;
}

/**
 * The seed's task request, as the controller sends it and the dispatcher takes it, with the
 * additive fields of CONTRACT section 4, the pod additions among them (sent only when set; a seed-only dispatcher ignores them).
 */
export interface TaskRequest extends PodAdditions {
  task_id: string;
  agent_image: string;
  runtime_target: { type: string; namespace: string };
  resources: TaskResources;
  env: Record<string, string>;
  ports: TaskPort[];
  brief_key: string;
  callback_url: string;
  callback_token: string;
  timeout_seconds: number;
  skills?: TaskSkill[];
  runtime_class?: string;
  network?: TaskNetwork;
  security?: TaskSecurity;
  /** `<secret>/<key>` references, resolved by the dispatcher (CONTRACT section 5). */
  secret_env?: Record<string, string>;
}

export const DEFAULT_TASK_RESOURCES: Readonly<TaskResources> = Object.freeze({ cpu: '500m', memory: '512Mi' });
export const DEFAULT_TASK_TIMEOUT_SECONDS = 3600;

/**
 * A runtime type as a workflow or task names it. The controller keeps no list of them:
 * dispatch looks for a dispatcher whose `backends` include the name.
 */
export const RUNTIME_TYPE_NAME = /^[a-z0-9]([a-z0-9-]{0,62})$/;
