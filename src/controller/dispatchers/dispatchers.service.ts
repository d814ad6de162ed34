import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { isUUID } from 'class-validator';
import { Subject } from 'rxjs';
import { DataSource, QueryFailedError, Repository } from 'typeorm';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { runPrepared } from '../../shared/database/statements';
import { DomainError } from '../../shared/errors/domain-error';
import type { Principal } from '../auth/principal';
import { ApiKeyCipher } from './api-key-cipher';
import { DispatcherState, dispatcherState, slugify } from './dispatcher-state';
import { DispatcherCheckinDto, DispatcherHeartbeatDto } from './dispatchers.dto';
import { Dispatcher, WarmPoolState } from './dispatchers.entity';

const DEFAULT_HEARTBEAT_INTERVAL_SECONDS = 30;

export interface DispatcherView {
  guid: string;
  name: string;
  slug: string;
  endpoint_url: string;
  cloud: string;
  backends: string[];
  labels: Record<string, string>;
  heartbeat_interval_seconds: number;
  active_tasks: number;
  capacity: number | null;
  state: DispatcherState;
  /** Its warm pools as its last heartbeat reported them: size, idle and claimed agents. */
  warm_pools: WarmPoolState[];
  last_heartbeat_at: string | null;
  has_api_key: boolean;
  /** `client:<client_id>`, `operator`, or null (the next check-in binds it). */
  bound_to: string | null;
  created_at: string;
  updated_at: string;
}

@Injectable()
export class DispatchersService {
  private readonly logger = new Logger(DispatchersService.name);
  private readonly cipher: ApiKeyCipher;

  constructor(
    @InjectRepository(Dispatcher) private readonly dispatchers: Repository<Dispatcher>,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectDataSource() private readonly db: DataSource,
  ) {
    this.cipher = new ApiKeyCipher(config.secretKey);
  }

  /**
   * Creates or updates the dispatcher of that name; a check-in also counts as a heartbeat.
   * The first check-in binds the name to its principal; another principal's is a 409 until
   * an operator re-binds it (operators may check in under any name).
   */
  async checkin(dto: DispatcherCheckinDto, principal: Principal): Promise<{ action: 'created' | 'updated'; dispatcher: Dispatcher }> {
    const slug = slugify(dto.name);
    if (!slug) throw DomainError.invalid({ name: ['must contain at least one letter or digit'] });
    const fields: Partial<Dispatcher> = {
      endpointUrl: dto.endpoint_url.replace(/\/+$/, ''),
      cloud: dto.cloud ?? '',
      backends: [...new Set(dto.backends)],
      labels: dto.labels ?? {},
      heartbeatIntervalSeconds: dto.heartbeat_interval_seconds ?? DEFAULT_HEARTBEAT_INTERVAL_SECONDS,
      apiKeyEncrypted: dto.api_key ? this.cipher.encrypt(dto.api_key) : null,
      lastHeartbeatAt: new Date(),
    };
    const existing = await this.dispatchers.findOneBy({ name: dto.name });
    if (existing) {
      assertBoundTo(existing, principal);
      // Conditional on the binding read above, so two principals racing for an unbound name cannot both win.
      const result = await this.dispatchers
        .createQueryBuilder()
        .update()
        .set({ ...fields, boundTo: existing.boundTo ?? bindingOf(principal) })
        .where('guid = :guid', { guid: existing.guid })
        .andWhere(existing.boundTo === null ? 'bound_to IS NULL' : 'bound_to = :boundTo', { boundTo: existing.boundTo })
        .returning(['guid'])
        .execute();
      // Bound by another check-in since the read: read again, which refuses or proceeds.
      if ((result.raw as unknown[]).length === 0) return this.checkin(dto, principal);
      const dispatcher = await this.dispatchers.findOneByOrFail({ guid: existing.guid });
      this.cameOnline.next(dispatcher);
      return { action: 'updated', dispatcher };
    }
    const taken = await this.dispatchers.findOneBy({ slug });
    if (taken) throw DomainError.conflict(`The slug "${slug}" is taken by the dispatcher "${taken.name}".`);
    try {
      const created = await this.dispatchers.save(this.dispatchers.create({ name: dto.name, slug, ...fields, boundTo: bindingOf(principal) }));
      this.cameOnline.next(created);
      return { action: 'created', dispatcher: created };
    } catch (error) {
      // Two first check-ins of one name at once: the loser becomes an update.
      if (isUniqueViolation(error) && (await this.dispatchers.existsBy({ name: dto.name }))) return this.checkin(dto, principal);
      if (isUniqueViolation(error)) throw DomainError.conflict(`The slug "${slug}" is taken by another dispatcher.`);
      throw error;
    }
  }

  /**
   * One statement: the row as it was (for its binding and whether it was online) and the
   * update, which happens only when the caller may make it. A dispatcher sends one every
   * `heartbeat_interval_seconds`; a read and a write of TypeORM's were most of what a
   * controller at rest did.
   */
  async heartbeat(dto: DispatcherHeartbeatDto, principal: Principal): Promise<{ guid: string; heartbeatIntervalSeconds: number }> {
    if (!isUUID(dto.dispatcher_guid)) throw unknownDispatcher();
    const now = new Date();
    const binding = principal.kind === 'operator' ? null : bindingOf(principal);
    const [before] = await runPrepared<HeartbeatRow>(this.db, HEARTBEAT, [
      dto.dispatcher_guid, dto.active_tasks, dto.capacity, now, dto.warm_pools ? JSON.stringify(dto.warm_pools) : null, binding,
    ]);
    if (!before) throw unknownDispatcher();
    if (!before.updated) assertBoundTo({ name: before.name, slug: before.slug, boundTo: before.bound_to }, principal);
    if (dispatcherState(before.last_heartbeat_at, before.heartbeat_interval_seconds, now) !== 'online') {
      this.cameOnline.next(await this.dispatchers.findOneByOrFail({ guid: before.guid }));
    }
    return { guid: before.guid, heartbeatIntervalSeconds: before.heartbeat_interval_seconds };
  }

  /**
   * An operator's re-binding: to the OAuth client `clientId`, or (none given) to whoever
   * checks in next under the dispatcher's name.
   */
  async rebind(slug: string, clientId: string | null): Promise<Dispatcher> {
    const dispatcher = await this.getBySlug(slug);
    dispatcher.boundTo = clientId ? `client:${clientId.toLowerCase()}` : null;
    await this.dispatchers.update({ guid: dispatcher.guid }, { boundTo: dispatcher.boundTo });
    this.logger.log({ dispatcher: dispatcher.slug, boundTo: dispatcher.boundTo ?? 'next check-in' }, 'Dispatcher re-bound by an operator');
    return dispatcher;
  }

  /** Dispatchers that just checked in, or sent a heartbeat after falling silent. */
  readonly cameOnline = new Subject<Dispatcher>();

  /** True when some dispatcher is online, read afresh. */
  async anyOnline(now = new Date()): Promise<boolean> {
    return (await this.all()).some((dispatcher) => dispatcherState(dispatcher.lastHeartbeatAt, dispatcher.heartbeatIntervalSeconds, now) === 'online');
  }

  list(): Promise<Dispatcher[]> {
    return this.dispatchers.find({ order: { name: 'ASC' } });
  }

  async getBySlug(slug: string): Promise<Dispatcher> {
    const dispatcher = await this.dispatchers.findOneBy({ slug });
    if (!dispatcher) throw DomainError.notFound('Dispatcher');
    return dispatcher;
  }

  async findByGuid(guid: string | null): Promise<Dispatcher | null> {
    if (!guid || !isUUID(guid)) return null;
    return this.dispatchers.findOneBy({ guid });
  }

  /** Every dispatcher, for a dispatch round to choose from. */
  all(): Promise<Dispatcher[]> {
    return this.dispatchers.find();
  }

  /** The key the controller sends as `X-API-Key`: the dispatcher's own, else DISPATCHER_API_KEY. */
  apiKeyFor(dispatcher: Dispatcher): string | null {
    if (dispatcher.apiKeyEncrypted) {
      try {
        return this.cipher.decrypt(dispatcher.apiKeyEncrypted);
      } catch {
        this.logger.warn({ dispatcher: dispatcher.slug }, 'Stored API key cannot be decrypted with this SECRET_KEY; using DISPATCHER_API_KEY');
      }
    }
    return this.config.dispatcherApiKey;
  }

  view(dispatcher: Dispatcher, now = new Date()): DispatcherView {
    return {
      guid: dispatcher.guid,
      name: dispatcher.name,
      slug: dispatcher.slug,
      endpoint_url: dispatcher.endpointUrl,
      cloud: dispatcher.cloud,
      backends: dispatcher.backends,
      labels: dispatcher.labels,
      heartbeat_interval_seconds: dispatcher.heartbeatIntervalSeconds,
      active_tasks: dispatcher.activeTasks,
      capacity: dispatcher.capacity,
      state: dispatcherState(dispatcher.lastHeartbeatAt, dispatcher.heartbeatIntervalSeconds, now),
      warm_pools: dispatcher.warmPools ?? [],
      last_heartbeat_at: dispatcher.lastHeartbeatAt?.toISOString() ?? null,
      has_api_key: dispatcher.apiKeyEncrypted !== null,
      bound_to: dispatcher.boundTo,
      created_at: dispatcher.createdAt.toISOString(),
      updated_at: dispatcher.updatedAt.toISOString(),
    };
  }
}

/**
 * A heartbeat: the row before it ($1), and the update when the caller is an operator ($6 null)
 * or the principal the dispatcher is bound to (or it is bound to none).
 */
const HEARTBEAT = `WITH before AS (
    SELECT guid, name, slug, bound_to, last_heartbeat_at, heartbeat_interval_seconds FROM "controller"."dispatchers" WHERE guid = $1 FOR UPDATE),
  updated AS (
    UPDATE "controller"."dispatchers" d
       SET active_tasks = $2, capacity = $3, last_heartbeat_at = $4, warm_pools = coalesce($5::jsonb, d.warm_pools), updated_at = CURRENT_TIMESTAMP
      FROM before
     WHERE d.guid = before.guid AND ($6::text IS NULL OR before.bound_to IS NULL OR before.bound_to = $6)
    RETURNING d.guid)
  SELECT before.*, EXISTS (SELECT 1 FROM updated) AS updated FROM before`;

/** 404 to a heartbeat of a guid the controller does not know: the dispatcher checks in again. */
function unknownDispatcher(): DomainError {
  return new DomainError('not_found', 'Dispatcher not found; check in again.');
}

interface HeartbeatRow {
  guid: string;
  name: string;
  slug: string;
  bound_to: string | null;
  last_heartbeat_at: Date | null;
  heartbeat_interval_seconds: number;
  updated: boolean;
}

/** What a dispatcher is bound to when `principal` checks it in: every operator is one principal here. */
export function bindingOf(principal: Principal): string {
  return principal.kind === 'operator' ? 'operator' : `client:${principal.id}`;
}

/** 409 `conflict` when the dispatcher is bound to another principal than this (non-operator) one. */
function assertBoundTo(dispatcher: Pick<Dispatcher, 'name' | 'slug' | 'boundTo'>, principal: Principal): void {
  if (principal.kind === 'operator' || dispatcher.boundTo === null || dispatcher.boundTo === bindingOf(principal)) return;
  throw DomainError.conflict(
    `The dispatcher "${dispatcher.name}" is registered by another principal; an operator can re-bind it with POST /api/v1/dispatchers/${dispatcher.slug}/rebind/.`,
  );
}

function isUniqueViolation(error: unknown): boolean {
  return error instanceof QueryFailedError && (error.driverError as { code?: string } | undefined)?.code === '23505';
}
