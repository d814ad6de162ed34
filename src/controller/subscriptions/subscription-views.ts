import { DeliveryAttempt, DeliveryState, Subscription, SubscriptionDelivery, SubscriptionFilter } from './subscriptions.entity';

export interface SubscriptionView {
  id: string;
  url: string;
  event_types: string[];
  filter: SubscriptionFilter;
  description: string;
  enabled: boolean;
  /** Why the controller disabled it: `gone` (410), `failing` (5 days of failures), `operator`; null when enabled. */
  disabled_reason: string | null;
  /** Until when the secret replaced by the last rotation still signs (null: none does). */
  previous_secret_expires_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface DeliveryView {
  id: string;
  subscription_id: string;
  event_id: number;
  event_type: string;
  status: DeliveryState;
  attempt_count: number;
  next_attempt_at: string | null;
  last_status: number | null;
  created_at: string;
  delivered_at: string | null;
  payload: Record<string, unknown>;
  attempts: DeliveryAttempt[];
}

export function toSubscriptionView(subscription: Subscription): SubscriptionView {
  const overlap = subscription.previousSecretExpiresAt && subscription.previousSecretExpiresAt.getTime() > Date.now() ? subscription.previousSecretExpiresAt : null;
  return {
    id: subscription.id,
    url: subscription.url,
    event_types: subscription.eventTypes,
    filter: subscription.filter,
    description: subscription.description,
    enabled: subscription.enabled,
    disabled_reason: subscription.enabled ? null : subscription.disabledReason,
    previous_secret_expires_at: overlap ? overlap.toISOString() : null,
    created_at: subscription.createdAt.toISOString(),
    updated_at: subscription.updatedAt.toISOString(),
  };
}

export function toDeliveryView(delivery: SubscriptionDelivery): DeliveryView {
  return {
    id: delivery.id,
    subscription_id: delivery.subscriptionId,
    event_id: Number(delivery.eventId),
    event_type: delivery.eventType,
    status: delivery.state,
    attempt_count: delivery.attemptCount,
    next_attempt_at: delivery.state === 'pending' ? delivery.nextAttemptAt.toISOString() : null,
    last_status: delivery.lastStatus,
    created_at: delivery.createdAt.toISOString(),
    delivered_at: delivery.deliveredAt ? delivery.deliveredAt.toISOString() : null,
    payload: delivery.payload,
    attempts: delivery.attempts,
  };
}
