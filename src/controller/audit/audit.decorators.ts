import { SetMetadata } from '@nestjs/common';

export const AUDIT_RESOURCE = 'atc:audit-resource';

/**
 * What the state-changing endpoints of a controller act on, for their audit rows: the
 * resource type, the path parameter naming the resource, and the answer field naming it
 * when the path does not (a creation). Without it the type is the controller's name and
 * both are `id`.
 */
export interface AuditResourceOptions {
  type: string;
  param?: string;
  answer?: string;
}

export function AuditResource(type: string, where: { param?: string; answer?: string } = {}) {
  return SetMetadata(AUDIT_RESOURCE, { type, ...where } satisfies AuditResourceOptions);
}
