import type { V1Job, V1Toleration } from '@kubernetes/client-node';
import { PodAdditionRules } from '../../shared/config/kubernetes-settings';
import { PodAdditions } from '../../shared/task-protocol/pod-additions';
import { MANAGED_BY_LABEL, TASK_ID_LABEL } from './kubernetes-manifests';

const QUALIFIED_NAME = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/**
 * What a task asks to add to its pod, checked against what the dispatcher allows
 * (KUBE_TASK_LABEL_PREFIXES, KUBE_TASK_ANNOTATION_PREFIXES, KUBE_TASK_NODE_SELECTOR_KEYS,
 * KUBE_TASK_TOLERATION_KEYS, KUBE_TASK_PRIORITY_CLASSES) and Kubernetes's syntax; the
 * problems are keyed by the request's field names.
 */
export function podAdditionProblems(additions: PodAdditions, rules: PodAdditionRules): Record<string, string[]> {
  const problems: Record<string, string[]> = {};
  const add = (field: string, problem: string) => (problems[field] ??= []).push(problem);
  const byPrefix = (prefixes: string[]) => (key: string) => prefixes.some((prefix) => key.startsWith(prefix));
  const exact = (names: string[]) => (key: string) => names.includes(key);
  checkMap('labels', additions.labels, byPrefix(rules.labelPrefixes), rules.labelPrefixes, true, add);
  checkMap('annotations', additions.annotations, byPrefix(rules.annotationPrefixes), rules.annotationPrefixes, false, add);
  checkMap('node_selector', additions.node_selector, exact(rules.nodeSelectorKeys), rules.nodeSelectorKeys, true, add);
  for (const toleration of additions.tolerations ?? []) {
    if (!toleration.key || !rules.tolerationKeys.includes(toleration.key)) {
      add('tolerations', `toleration key "${toleration.key ?? ''}" is not allowed here (allowed: ${listOf(rules.tolerationKeys)})`);
    }
  }
  if (additions.priority_class && !rules.priorityClasses.includes(additions.priority_class)) {
    add('priority_class', `"${additions.priority_class}" is not allowed here (allowed: ${listOf(rules.priorityClasses)})`);
  }
  return problems;
}

function checkMap(
  field: string,
  map: Record<string, string> | undefined,
  allowed: (key: string) => boolean,
  rule: string[],
  labelValues: boolean,
  add: (field: string, problem: string) => void,
): void {
  for (const [key, value] of Object.entries(map ?? {})) {
    if (!QUALIFIED_NAME.test(key) || key.split('/').at(-1)!.length > 63) add(field, `"${key}" is not a valid Kubernetes key`);
    else if (!allowed(key)) add(field, `key "${key}" is not allowed here (allowed: ${listOf(rule)})`);
    else if (labelValues && (value.length > 63 || !LABEL_VALUE.test(value))) add(field, `"${key}" has an invalid value "${value}"`);
  }
}

function managedLabelsOf(labels: Record<string, string> | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(labels ?? {}).filter(([key]) => key === MANAGED_BY_LABEL || key === TASK_ID_LABEL));
}

function listOf(names: string[]): string {
  return names.length > 0 ? names.join(', ') : 'none';
}

/** Adds the task's own labels, annotations, node selector, tolerations and priority class to the Job's pod. */
export function applyPodAdditions(job: V1Job, additions: PodAdditions): void {
  const template = job.spec!.template;
  const metadata = (template.metadata ??= {});
  const pod = template.spec!;
  // The Job's own labels (managed-by, task-id) always win: they are how the dispatcher finds its pods.
  if (additions.labels) metadata.labels = { ...metadata.labels, ...additions.labels, ...managedLabelsOf(metadata.labels) };
  if (additions.annotations) metadata.annotations = { ...metadata.annotations, ...additions.annotations };
  if (additions.node_selector) pod.nodeSelector = { ...pod.nodeSelector, ...additions.node_selector };
  if (additions.tolerations) pod.tolerations = [...(pod.tolerations ?? []), ...(additions.tolerations as V1Toleration[])];
  if (additions.priority_class) pod.priorityClassName = additions.priority_class;
}
