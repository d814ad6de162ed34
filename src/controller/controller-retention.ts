import { Inject, Injectable } from '@nestjs/common';
import { AppConfig } from '../shared/config/config';
import { APP_CONFIG } from '../shared/config/config.module';
import { RetentionSweep, RetentionTarget } from '../shared/retention/retention-sweep';
import { OBJECT_STORAGE, ObjectStorage } from '../shared/storage/object-storage';
import { AuditRepository } from './audit/audit.repository';
import { EventsRepository } from './events/events.repository';
import { SubscriptionOutbox } from './subscriptions/subscription-outbox';
import { DeliveryLedger } from './webhooks/delivery-ledger';
import { TasksRepository } from './tasks/tasks.repository';

/**
 * TASK_RETENTION_DAYS and DELIVERY_RETENTION_DAYS on the controller: final tasks with the
 * briefs the controller wrote for them (`briefs/<guid>.json`; a `brief_key` a caller gave
 * is the caller's object and stays), webhook ledger rows and ended outbound event deliveries,
 * EVENT_RETENTION_HOURS of events and AUDIT_RETENTION_DAYS of the audit trail.
 */
@Injectable()
export class ControllerRetention extends RetentionSweep {
  constructor(
    private readonly tasks: TasksRepository,
    private readonly ledger: DeliveryLedger,
    private readonly events: EventsRepository,
    @Inject(OBJECT_STORAGE) private readonly storage: ObjectStorage,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly subscriptionDeliveries: SubscriptionOutbox,
    private readonly audit: AuditRepository,
  ) {
    super();
  }

  protected targets(): RetentionTarget[] {
    return [
      {
        name: 'final tasks',
        days: this.config.taskRetentionDays,
        sweep: (days, batch) =>
          this.tasks.deleteFinished(days, batch, async (tasks) => {
            for (const task of tasks) {
              if (task.briefKey === `briefs/${task.guid}.json`) await this.storage.delete(task.briefKey);
            }
          }),
      },
      { name: 'webhook deliveries', days: this.config.deliveryRetentionDays, sweep: (days, batch) => this.ledger.deleteReceivedBefore(days, batch) },
      { name: 'subscription deliveries', days: this.config.deliveryRetentionDays, sweep: (days, batch) => this.subscriptionDeliveries.deleteEndedBefore(days, batch) },
      { name: 'audit entries', days: this.config.auditRetentionDays, sweep: (days, batch) => this.audit.deleteOlderThan(days, batch) },
      { name: 'events', days: this.config.eventRetentionHours / 24, sweep: (days, batch) => this.events.deleteOlderThan(days * 24, batch) },
    ];
  }
}
