import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, SelectQueryBuilder } from 'typeorm';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { keysetPage, KeysetRequest } from '../../shared/database/keyset-page';
import { DomainError } from '../../shared/errors/domain-error';
import { CursorPage, toCursorPage } from '../../shared/http/page';
import { Principal } from '../auth/principal';
import { Scope } from '../auth/scopes';
import { ApiKeyCipher } from '../dispatchers/api-key-cipher';
import { newSecret } from './subscription-signing';
import { TargetPolicy, urlProblem } from './subscription-target';
import { CreateSubscriptionDto, UpdateSubscriptionDto } from './subscriptions.dto';
import { DeliveryState, Subscription, SubscriptionDelivery, SubscriptionEventType } from './subscriptions.entity';
import { DeliveryView, SubscriptionView, toDeliveryView, toSubscriptionView } from './subscription-views';

/** The scope an OAuth client needs to be sent events of a type (it could read them through the API with it). */
const READ_SCOPE: Record<SubscriptionEventType, Scope | null> = {
  'task.created': 'tasks:read',
  'task.status': 'tasks:read',
  'task.progress': 'tasks:read',
  'task.finished': 'tasks:read',
  'task.retrying': 'tasks:read',
  'dispatcher.state': 'dispatchers:read',
  'subscription.disabled': null,
};

/** A subscription is no way around the scopes: a client is sent only the events its own token could read. */
function checkReadable(types: SubscriptionEventType[], principal: Principal): void {
  if (principal.kind === 'operator') return;
  const missing = [...new Set(types.map((type) => READ_SCOPE[type]).filter((scope): scope is Scope => scope !== null && !principal.scopes.includes(scope)))];
  if (missing.length > 0) {
    throw new DomainError('permission_denied', `Subscribing to these event types needs the scope ${missing.join(' and ')} as well.`, { details: { missing_scopes: missing } });
  }
}

/** A rotated secret keeps signing beside the new one this long. */
export const ROTATION_OVERLAP_HOURS = 24;

/**
 * Subscriptions and their delivery log: CRUD, secret rotation, replays. An OAuth client
 * sees and changes only the subscriptions it made (another's is a 404, as if absent);
 * an operator sees every one.
 */
@Injectable()
export class SubscriptionsService {
  private readonly cipher: ApiKeyCipher;
  private readonly policy: TargetPolicy;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.cipher = new ApiKeyCipher(config.secretKey);
    this.policy = new TargetPolicy(config.subscriptions.allowedCidrs);
  }

  async create(body: CreateSubscriptionDto, principal: Principal): Promise<SubscriptionView & { secret: string }> {
    this.checkUrl(body.url);
    checkReadable(body.event_types, principal);
    const secret = newSecret();
    const saved = await this.db.getRepository(Subscription).save({
      url: body.url,
      eventTypes: [...new Set(body.event_types)],
      filter: { ...(body.filter ?? {}) },
      description: body.description ?? '',
      enabled: body.enabled ?? true,
      ownerClientId: principal.kind === 'client' ? principal.id : null,
      secretSealed: this.cipher.encrypt(secret),
    });
    return { ...toSubscriptionView(await this.find(saved.id, principal)), secret };
  }

  async list(request: KeysetRequest, principal: Principal): Promise<CursorPage<SubscriptionView>> {
    const query = this.visible(principal);
    const page = await keysetPage(query, { time: 's.created_at', id: 's.id' }, request);
    return toCursorPage(page, page.items.map(toSubscriptionView), request, { baseUrl: this.config.publicUrl, path: '/api/v1/subscriptions/' });
  }

  async get(id: string, principal: Principal): Promise<SubscriptionView> {
    return toSubscriptionView(await this.find(id, principal));
  }

  async update(id: string, body: UpdateSubscriptionDto, principal: Principal): Promise<SubscriptionView> {
    const subscription = await this.find(id, principal);
    if (body.url !== undefined) this.checkUrl(body.url);
    if (body.event_types !== undefined) checkReadable(body.event_types, principal);
    const enabling = body.enabled === true && !subscription.enabled;
    await this.db.getRepository(Subscription).update(id, {
      ...(body.url !== undefined ? { url: body.url } : {}),
      ...(body.event_types !== undefined ? { eventTypes: [...new Set(body.event_types)] } : {}),
      ...(body.filter !== undefined ? { filter: { ...body.filter } } : {}),
      ...(body.description !== undefined ? { description: body.description } : {}),
      ...(body.enabled !== undefined ? { enabled: body.enabled, disabledReason: body.enabled ? null : 'operator' } : {}),
      // Enabled again: the five days of failures count from the next failure.
      ...(enabling ? { failingSince: null } : {}),
      updatedAt: () => 'now()',
    });
    return toSubscriptionView(await this.find(id, principal));
  }

  async remove(id: string, principal: Principal): Promise<void> {
    await this.find(id, principal);
    await this.db.getRepository(Subscription).delete(id);
  }

  /** A new secret; the one it replaces keeps signing for ROTATION_OVERLAP_HOURS. */
  async rotateSecret(id: string, principal: Principal): Promise<SubscriptionView & { secret: string }> {
    await this.find(id, principal);
    const secret = newSecret();
    await this.db.query(
      `UPDATE "controller"."subscriptions" SET previous_secret_sealed = secret_sealed, secret_sealed = $2,
         previous_secret_expires_at = now() + make_interval(hours => $3), updated_at = now() WHERE id = $1`,
      [id, this.cipher.encrypt(secret), ROTATION_OVERLAP_HOURS],
    );
    return { ...toSubscriptionView(await this.find(id, principal)), secret };
  }

  async deliveries(id: string, request: KeysetRequest & { status?: DeliveryState }, principal: Principal): Promise<CursorPage<DeliveryView>> {
    await this.find(id, principal);
    const query = this.db.getRepository(SubscriptionDelivery).createQueryBuilder('d').where('d.subscription_id = :id', { id });
    if (request.status) query.andWhere('d.state = :status', { status: request.status });
    const page = await keysetPage(query, { time: 'd.created_at', id: 'd.id' }, request);
    return toCursorPage(page, page.items.map(toDeliveryView), request, {
      baseUrl: this.config.publicUrl,
      path: `/api/v1/subscriptions/${id}/deliveries/`,
      query: { status: request.status },
    });
  }

  /** Sends one delivery again, as a new attempt sequence with the same `webhook-id`. */
  async replayDelivery(id: string, deliveryId: string, principal: Principal): Promise<DeliveryView> {
    await this.find(id, principal);
    const [rows] = (await this.db.query(
      `UPDATE "controller"."subscription_deliveries" SET state = 'pending', attempt_count = 0, next_attempt_at = now(), claimed_by = NULL
       WHERE id = $1 AND subscription_id = $2 AND NOT (state = 'pending' AND claimed_by IS NOT NULL) RETURNING id`,
      [deliveryId, id],
    )) as [unknown[], number];
    const delivery = await this.db.getRepository(SubscriptionDelivery).findOneBy({ id: deliveryId, subscriptionId: id });
    if (!delivery) throw DomainError.notFound('Delivery');
    if (rows.length === 0) throw DomainError.conflict('The delivery is being attempted right now.');
    return toDeliveryView(delivery);
  }

  /**
   * Sends again every delivery made since `since`, and makes the ones the subscription
   * missed meanwhile (it was disabled, or did not ask yet) from the events still kept.
   */
  async replaySince(id: string, since: string, principal: Principal): Promise<{ replayed: number }> {
    await this.find(id, principal);
    const [again] = (await this.db.query(
      `UPDATE "controller"."subscription_deliveries" SET state = 'pending', attempt_count = 0, next_attempt_at = now(), claimed_by = NULL
       WHERE subscription_id = $1 AND created_at >= $2 AND state <> 'pending' RETURNING id`,
      [id, since],
    )) as [unknown[], number];
    const missed = (await this.db.query(
      `INSERT INTO "controller"."subscription_deliveries" (subscription_id, event_id, event_type, payload)
       SELECT s.id, e.id, e.kind, "controller"."event_delivery_payload"(e.kind, e.id, e.created_at, e.data)
       FROM "controller"."events" e JOIN "controller"."subscriptions" s ON s.id = $1
       WHERE e.created_at >= $2 AND "controller"."subscription_matches"(s.event_types, s.filter, e.kind, e.data)
       ON CONFLICT (subscription_id, event_id) DO NOTHING RETURNING id`,
      [id, since],
    )) as unknown[];
    return { replayed: again.length + missed.length };
  }

  private checkUrl(url: string): void {
    const problem = urlProblem(url, this.config.production, this.policy);
    if (problem) throw DomainError.invalid({ url: [`url ${problem}`] });
  }

  private visible(principal: Principal): SelectQueryBuilder<Subscription> {
    const query = this.db.getRepository(Subscription).createQueryBuilder('s');
    if (principal.kind === 'client') query.where('s.owner_client_id = :owner', { owner: principal.id });
    return query;
  }

  private async find(id: string, principal: Principal): Promise<Subscription> {
    const subscription = /^[0-9a-f-]{36}$/i.test(id) ? await this.visible(principal).andWhere('s.id = :id', { id }).getOne() : null;
    if (!subscription) throw DomainError.notFound('Subscription');
    return subscription;
  }
}
