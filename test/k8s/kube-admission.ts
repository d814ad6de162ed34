type Json = Record<string, unknown>;
interface Container { name: string; securityContext?: { allowPrivilegeEscalation?: boolean; capabilities?: { drop?: string[] }; runAsNonRoot?: boolean; seccompProfile?: { type?: string } } }

/**
 * Pod Security admission at level `restricted` (the checks a Job's pod most often fails),
 * worded as the API server words its refusal after `pods "x" is forbidden: `.
 */
export function restrictedPodSecurity(pod: Json): string | undefined {
  const podContext = (pod.securityContext ?? {}) as { runAsNonRoot?: boolean; seccompProfile?: { type?: string } };
  const containers = (pod.containers ?? []) as Container[];
  const names = (list: Container[]) => list.map((c) => `"${c.name}"`).join(', ');
  const violations: string[] = [];
  const escalating = containers.filter((c) => c.securityContext?.allowPrivilegeEscalation !== false);
  if (escalating.length) violations.push(`allowPrivilegeEscalation != false (container ${names(escalating)} must set securityContext.allowPrivilegeEscalation=false)`);
  const capable = containers.filter((c) => !c.securityContext?.capabilities?.drop?.includes('ALL'));
  if (capable.length) violations.push(`unrestricted capabilities (container ${names(capable)} must set securityContext.capabilities.drop=["ALL"])`);
  const rootable = containers.filter((c) => c.securityContext?.runAsNonRoot !== true && podContext.runAsNonRoot !== true);
  if (rootable.length) violations.push(`runAsNonRoot != true (pod or container ${names(rootable)} must set securityContext.runAsNonRoot=true)`);
  const unconfined = containers.filter((c) => !['RuntimeDefault', 'Localhost'].includes(c.securityContext?.seccompProfile?.type ?? podContext.seccompProfile?.type ?? ''));
  if (unconfined.length) violations.push(`seccompProfile (pod or container ${names(unconfined)} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`);
  return violations.length ? `violates PodSecurity "restricted:latest": ${violations.join(', ')}` : undefined;
}
