import { http, HttpAnswer } from './http';
import { operator } from './controller-tasks';
import { TestSystem } from './system';

/** Builders for /api/v1/subscriptions/. */
export async function subscribe(system: TestSystem, fields: Record<string, unknown>, headers = operator(system)): Promise<HttpAnswer> {
  const answer = await http('POST', `${system.controllerUrl}/api/v1/subscriptions/`, { headers, json: fields });
  return answer;
}

export function subscriptionApi(system: TestSystem, headers = operator(system)) {
  const base = `${system.controllerUrl}/api/v1/subscriptions/`;
  return {
    get: (id: string) => http('GET', `${base}${id}/`, { headers }),
    list: (query = '') => http('GET', `${base}${query}`, { headers }),
    update: (id: string, json: unknown) => http('PATCH', `${base}${id}/`, { headers, json }),
    remove: (id: string) => http('DELETE', `${base}${id}/`, { headers }),
    rotate: (id: string) => http('POST', `${base}${id}/rotate-secret/`, { headers }),
    deliveries: (id: string, query = '') => http('GET', `${base}${id}/deliveries/${query}`, { headers }),
    replay: (id: string, deliveryId: string) => http('POST', `${base}${id}/deliveries/${deliveryId}/replay/`, { headers }),
    replaySince: (id: string, since: string) => http('POST', `${base}${id}/replay/`, { headers, json: { since } }),
  };
}
