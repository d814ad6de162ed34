import { chatSource } from './chat';
import { customSource } from './custom';
import { forgeSource } from './forge';

/** Every webhook source, in the order their headers are tried when X-Webhook-Source is absent. */
export const WEBHOOK_SOURCE_ADAPTERS = [forgeSource, chatSource, customSource] as const;

export type WebhookSource = (typeof WEBHOOK_SOURCE_ADAPTERS)[number]['name'];
export const WEBHOOK_SOURCES: readonly WebhookSource[] = WEBHOOK_SOURCE_ADAPTERS.map((adapter) => adapter.name);

export function sourceAdapter(name: WebhookSource) {
  return WEBHOOK_SOURCE_ADAPTERS.find((adapter) => adapter.name === name)!;
}
