import { hostname } from 'node:os';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Subscription } from 'rxjs';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { SerialLoop } from '../../shared/loop/serial-loop';
import { ApiKeyCipher } from '../dispatchers/api-key-cipher';
import { EventFeed } from '../events/event-feed';
import { subscriptionAttempts } from './subscription-metrics';
import { PostResult, SubscriptionPoster } from './subscription-poster';
import { AttemptOutcome, ClaimedDelivery, SubscriptionOutbox } from './subscription-outbox';
import { retryDelayMs, signedHeaders } from './subscription-signing';
import { TargetPolicy } from './subscription-target';

/** Due deliveries are looked for this often even when no event was announced (retries come due by time). */
const POLL_MS = 500;
/**
 * Whether any subscription is enabled is read again at most this often (sooner after a change
 * made in this process): with none, the rounds every event wakes would claim nothing, and
 * skip the claim's statement. One made on another replica is seen within this time.
 */
const SUBSCRIBED_RECHECK_MS = 1_000;
/** Attempts one process has under way at once, across every endpoint. */
const MAX_IN_FLIGHT = 128;
/** A claimed delivery is hidden from other replicas this long; an attempt takes at most 15 s. */
const LEASE_SECONDS = 60;
/** An endpoint failing this long without one success is disabled (Svix: 5 days). */
export const DISABLE_AFTER_SECONDS = 5 * 86400;

/**
 * Delivers the subscription outbox, which the events' own statements fill (see the
 * migration's trigger). Woken when this process or another replica writes events (the event
 * feed's `wrote`, which carries both) and by a timer; a round only claims and starts attempts, so an endpoint that hangs holds its
 * own slots (SUBSCRIPTION_CONCURRENCY_PER_ENDPOINT) and nothing else.
 */
@Injectable()
export class SubscriptionDeliveryService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Subscriptions');
  private readonly loop = new SerialLoop(() => this.deliverDue(), (error) => this.logger.error({ err: error }, 'Subscription delivery round failed'));
  private readonly inFlight = new Set<Promise<void>>();
  private readonly poster: SubscriptionPoster;
  private readonly cipher: ApiKeyCipher;
  private readonly claimant: string;
  private timer?: NodeJS.Timeout;
  private wrote?: Subscription;
  private subscribed = { any: true, readAt: Number.NEGATIVE_INFINITY };

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly outbox: SubscriptionOutbox,
    private readonly events: EventFeed,
  ) {
    this.poster = new SubscriptionPoster(new TargetPolicy(config.subscriptions.allowedCidrs));
    this.cipher = new ApiKeyCipher(config.secretKey);
    this.claimant = `${hostname()}:${config.controllerPort}`;
  }

  async onApplicationBootstrap(): Promise<void> {
    const resumed = await this.outbox.resumeInterrupted(this.claimant).catch((error: unknown) => {
      this.logger.warn({ err: error }, 'Could not resume interrupted deliveries; their lease ends them');
      return 0;
    });
    if (resumed > 0) this.logger.warn({ deliveries: resumed }, 'Resuming deliveries interrupted by the last stop');
    this.wrote = this.events.wrote.subscribe(() => this.loop.kick());
    this.timer = setInterval(() => this.loop.kick(), POLL_MS);
    this.timer.unref();
    this.loop.kick();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    this.wrote?.unsubscribe();
    await this.loop.stop();
    await Promise.all(this.inFlight);
    this.poster.close();
  }

  /** Something was written in this process that may have made deliveries (an event, a replay). */
  kick(): void {
    this.loop.kick();
  }

  /** A subscription was made, changed or removed in this process: the next round reads whether any is enabled. */
  subscriptionsChanged(): void {
    this.subscribed.readAt = Number.NEGATIVE_INFINITY;
    this.loop.kick();
  }

  private async deliverDue(): Promise<void> {
    const room = MAX_IN_FLIGHT - this.inFlight.size;
    // Full: the next attempt to end starts a round.
    if (room <= 0) return;
    if (!(await this.anySubscribed())) return;
    const due = await this.outbox.claim(room, this.config.subscriptions.concurrencyPerEndpoint, this.claimant, LEASE_SECONDS);
    for (const delivery of due) this.start(delivery);
  }

  private async anySubscribed(): Promise<boolean> {
    if (performance.now() - this.subscribed.readAt < SUBSCRIBED_RECHECK_MS) return this.subscribed.any;
    const readAt = performance.now();
    this.subscribed = { any: await this.outbox.anyEnabled(), readAt };
    return this.subscribed.any;
  }

  private start(delivery: ClaimedDelivery): void {
    const attempt = this.attempt(delivery)
      .catch((error: unknown) => this.logger.error({ deliveryId: delivery.id, err: error }, 'Could not record a delivery attempt'))
      .finally(() => {
        this.inFlight.delete(attempt);
        // A slot of this endpoint is free: its next delivery may go now.
        this.loop.kick();
      });
    this.inFlight.add(attempt);
  }

  private async attempt(delivery: ClaimedDelivery): Promise<void> {
    const body = JSON.stringify(delivery.payload);
    const secrets = [delivery.secret_sealed, delivery.previous_secret_sealed].filter((sealed): sealed is string => !!sealed).map((sealed) => this.cipher.decrypt(sealed));
    const at = new Date();
    const result = await this.poster.post(delivery.url, body, signedHeaders(delivery.id, body, secrets, at));
    const outcome = this.outcomeOf(delivery, result);
    subscriptionAttempts.inc({ outcome: outcome.kind === 'delivered' ? 'delivered' : 'failed' });
    const { failingTooLong } = await this.outbox.record(delivery, {
      at: at.toISOString(),
      status_code: result.status,
      duration_ms: result.durationMs,
      response: result.response,
      error: result.error,
    }, outcome, DISABLE_AFTER_SECONDS);
    if (outcome.kind === 'gone') await this.disable(delivery, 'gone', 'The endpoint answered 410 Gone.');
    else if (failingTooLong) await this.disable(delivery, 'failing', 'Every attempt to the endpoint has failed for 5 days.');
  }

  private outcomeOf(delivery: ClaimedDelivery, result: PostResult): AttemptOutcome {
    if (result.status !== null && result.status >= 200 && result.status < 300) return { kind: 'delivered' };
    if (result.status === 410) return { kind: 'gone' };
    const delayMs = retryDelayMs(delivery.attempt_count, this.config.subscriptions.retrySchedule);
    return delayMs === null ? { kind: 'failed' } : { kind: 'retry', delayMs };
  }

  private async disable(delivery: ClaimedDelivery, reason: 'gone' | 'failing', message: string): Promise<void> {
    if (await this.outbox.disable(delivery.subscription_id, reason, message)) {
      this.logger.warn({ subscriptionId: delivery.subscription_id, reason }, 'Subscription disabled');
    }
  }
}
